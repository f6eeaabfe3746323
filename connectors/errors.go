package connectors

import "github.com/hummer-db/hummer/connectors/spec"

// ErrBadOption is wrapped by every error about a table's CONNECTION URL or its
// options: CREATE TABLE refuses the table. It is spec.ErrBadOption, which the
// connector folders wrap (they cannot import this package, which imports them).
var ErrBadOption = spec.ErrBadOption

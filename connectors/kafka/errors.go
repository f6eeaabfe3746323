package kafka

import "errors"

// errRetraction is returned for a Delete or UpdateBefore row sent to a table
// without a PRIMARY KEY: an append-only topic cannot take one back.
var errRetraction = errors.New("kafka: append-only sink got a retraction (give the table a PRIMARY KEY to upsert)")

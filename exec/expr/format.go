package expr

import (
	"math"
	"strconv"
	"strings"

	"github.com/hummer-db/hummer/exec/types"
)

// FormatValue renders v as SQL literal text, for EXPLAIN and error messages:
// NULL, TRUE and FALSE; numbers as PostgreSQL prints them (decimals with every
// digit of their scale); text in single quotes with quotes doubled; timestamps
// as TIMESTAMP '2006-01-02 15:04:05[.ffffff]'. Doubles that have no literal
// form (NaN, infinities) are written as casts from text.
func FormatValue(v types.Value) string {
	if v.Null || v.Type.ID == types.Null {
		return "NULL"
	}
	switch v.Type.ID {
	case types.Bool:
		if v.Bool {
			return "TRUE"
		}
		return "FALSE"
	case types.Int64:
		return strconv.FormatInt(v.Int, 10)
	case types.Float64:
		s := string(types.AppendFloat(nil, v.Float))
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return "CAST('" + s + "' AS double)"
		}
		return s
	case types.Decimal:
		return string(types.AppendDecimal(nil, v.Decimal(), int(v.Type.Scale)))
	case types.String:
		return "'" + strings.ReplaceAll(v.Str, "'", "''") + "'"
	case types.Timestamp:
		return "TIMESTAMP '" + string(types.AppendTimestamp(nil, v.Int)) + "'"
	case types.Date:
		return "DATE '" + string(types.AppendDate(nil, v.Int)) + "'"
	}
	return "?"
}

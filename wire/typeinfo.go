package wire

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec/types"
)

// PostgreSQL type OIDs of the engine's types (pg_type.oid), as clients know them.
const (
	oidBool      = 16
	oidInt8      = 20
	oidText      = 25
	oidFloat8    = 701
	oidTimestamp = 1114
	oidDate      = 1082
	oidNumeric   = 1700
)

// pgType describes how a column of type t appears in a RowDescription: type OID,
// typlen (-1 for variable length) and typmod (-1 when the type has none).
func pgType(t types.Type) (oid uint32, size int16, mod int32) {
	switch t.ID {
	case types.Bool:
		return oidBool, 1, -1
	case types.Int64:
		return oidInt8, 8, -1
	case types.Float64:
		return oidFloat8, 8, -1
	case types.Decimal:
		// numeric's typmod packs precision and scale after the VARHDRSZ offset.
		return oidNumeric, -1, (int32(t.Precision)<<16 | int32(t.Scale)) + 4
	case types.Timestamp:
		return oidTimestamp, 8, -1
	case types.Date:
		return oidDate, 4, -1
	}
	// String, and Null which PostgreSQL would report as text after coercion.
	return oidText, -1, -1
}

// rightAligned reports whether psql right-aligns a column of type t in its aligned
// output: it does for the number types.
func rightAligned(t types.Type) bool {
	return t.IsNumeric()
}

// rowDescription describes schema's columns, all in text format.
func rowDescription(schema types.Schema) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(schema))
	for i, f := range schema {
		oid, size, mod := pgType(f.Type)
		fields[i] = pgproto3.FieldDescription{
			Name:         []byte(f.Name),
			DataTypeOID:  oid,
			DataTypeSize: size,
			TypeModifier: mod,
			Format:       pgproto3.TextFormat,
		}
	}
	return &pgproto3.RowDescription{Fields: fields}
}

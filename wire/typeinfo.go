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
	switch t.OID {
	case types.OIDName:
		return t.OID, 64, -1
	case types.OIDChar:
		return t.OID, 1, -1
	case types.OIDRegclass:
		return t.OID, 4, -1
	case types.OIDTimestamptz:
		return t.OID, 8, -1
	case types.OIDBytea:
		return t.OID, -1, -1
	case types.OIDInterval:
		return t.OID, 16, -1
	case types.OIDInt2:
		return t.OID, 2, -1
	case types.OIDInt4, types.OIDOid, types.OIDFloat4:
		return t.OID, 4, -1
	case types.OIDVarchar, types.OIDBpchar:
		if t.Len > 0 {
			return t.OID, -1, t.Len + 4 // the length after the VARHDRSZ offset
		}
		return t.OID, -1, -1
	}
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

// paramType is the engine's type for a parameter the client declared of type
// oid in Parse: PostgreSQL's types the engine has, by the engine's type that
// holds them (int2 and int4 are bigint, timestamptz a timestamp in UTC, json
// and uuid text); the null type where the parameter's type is to be inferred
// (OID 0; unknown; numeric, since the engine has no numeric of unbounded
// scale, so that the context gives the precision and scale; and types the
// engine does not know, whose text the context's type parses, as before
// clients declared types). Types whose values the engine could only
// misread are refused.
func paramType(oid uint32) (types.Type, error) {
	switch oid {
	case oidBool:
		return types.BoolType, nil
	case oidInt2, oidInt4, oidInt8, oidOID:
		return types.Int64Type, nil
	case oidFloat4, oidFloat8:
		return types.Float64Type, nil
	case oidText, oidVarchar, oidBpchar, oidJSON, oidJSONB, oidUUID, oidXML:
		return types.StringType, nil
	case oidName:
		return types.NameType, nil
	case oidChar:
		return types.CharType, nil
	case oidDate:
		return types.DateType, nil
	case oidTimestamp:
		return types.TimestampType, nil
	case oidTimestamptz:
		return types.TimestamptzType, nil
	case oidBytea:
		return types.ByteaType, nil
	case oidInterval:
		return types.IntervalType, nil
	}
	return types.NullType, nil
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

// Package types is the engine's small, serialisable type system: the SQL types a
// column can have, schemas, and scalar values. Every runtime value is stored in an
// Arrow array whose data type is Type.Arrow(); the planner, the JobGraph and the
// network all describe columns with these types so that a graph can be shipped to
// another process as JSON and rebuilt there exactly.
//
// It imports nothing of Hummer's.
package types

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ID names a SQL type family.
type ID uint8

const (
	// Null is the type of the untyped NULL literal; it is coerced away by the binder.
	Null ID = iota
	Bool
	Int64
	Float64
	// Decimal is a fixed-point number stored as Arrow Decimal128 with Precision and Scale.
	Decimal
	String
	// Timestamp is a timestamp without time zone, stored as Arrow Timestamp in microseconds.
	Timestamp
	// Date is a calendar date, stored as the timestamp of its midnight (Arrow
	// Timestamp in microseconds): every operator that handles timestamps
	// handles dates; the type tells casts, arithmetic and clients apart.
	Date
)

var idNames = [...]string{Null: "null", Bool: "boolean", Int64: "bigint", Float64: "double",
	Decimal: "decimal", String: "text", Timestamp: "timestamp", Date: "date"}

func (id ID) String() string {
	if int(id) < len(idNames) {
		return idNames[id]
	}
	return fmt.Sprintf("type(%d)", uint8(id))
}

// Type is a SQL type. Precision and Scale matter only for Decimal. OID, when
// not 0, is a PostgreSQL type the engine holds as ID (pgtypes.go): every
// operator and kernel handles it as ID; casts, the binder and the wire tell
// it apart. Len is the declared length n of character varying(n) and
// character(n) (0: none), which casts to the type enforce.
type Type struct {
	ID        ID     `json:"id"`
	Precision int8   `json:"p,omitempty"`
	Scale     int8   `json:"s,omitempty"`
	OID       uint32 `json:"oid,omitempty"`
	Len       int32  `json:"len,omitempty"`
}

// Convenience values for the types without parameters.
var (
	NullType      = Type{ID: Null}
	BoolType      = Type{ID: Bool}
	Int64Type     = Type{ID: Int64}
	Float64Type   = Type{ID: Float64}
	StringType    = Type{ID: String}
	TimestampType = Type{ID: Timestamp}
	DateType      = Type{ID: Date}
)

// DecimalType returns DECIMAL(precision, scale). Precision is capped at 38, the most
// a Decimal128 holds.
func DecimalType(precision, scale int) Type {
	if precision > 38 {
		precision = 38
	}
	if precision < 1 {
		precision = 1
	}
	if scale > precision {
		scale = precision
	}
	if scale < 0 {
		scale = 0
	}
	return Type{ID: Decimal, Precision: int8(precision), Scale: int8(scale)}
}

func (t Type) String() string {
	if t.OID != 0 {
		if t.OID == OIDBpchar && t.Len == 0 {
			return "bpchar"
		}
		if t.Len > 0 {
			return fmt.Sprintf("%s(%d)", pgTypeNames[t.OID], t.Len)
		}
		return pgTypeNames[t.OID]
	}
	if t.ID == Decimal {
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	}
	return t.ID.String()
}

// IsNumeric reports whether t is one of the number types.
func (t Type) IsNumeric() bool {
	return t.ID == Int64 || t.ID == Float64 || t.ID == Decimal
}

// Arrow returns the Arrow data type that stores values of t.
func (t Type) Arrow() arrow.DataType {
	switch t.ID {
	case Null:
		return arrow.Null
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Float64:
		return arrow.PrimitiveTypes.Float64
	case Decimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case String:
		return arrow.BinaryTypes.String
	case Timestamp, Date:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	}
	panic(fmt.Sprintf("types: no Arrow type for %v", t))
}

// FromArrow is the inverse of Type.Arrow for the types the engine stores.
func FromArrow(dt arrow.DataType) (Type, error) {
	switch d := dt.(type) {
	case *arrow.NullType:
		return NullType, nil
	case *arrow.BooleanType:
		return BoolType, nil
	case *arrow.Int64Type:
		return Int64Type, nil
	case *arrow.Float64Type:
		return Float64Type, nil
	case *arrow.Decimal128Type:
		return DecimalType(int(d.Precision), int(d.Scale)), nil
	case *arrow.StringType:
		return StringType, nil
	case *arrow.TimestampType:
		return TimestampType, nil
	}
	return Type{}, fmt.Errorf("types: unsupported Arrow type %v", dt)
}

// Field is one named column.
type Field struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
}

// Schema is an ordered list of columns.
type Schema []Field

// Arrow returns the Arrow schema of s; every field is nullable.
func (s Schema) Arrow() *arrow.Schema {
	fs := make([]arrow.Field, len(s))
	for i, f := range s {
		fs[i] = arrow.Field{Name: f.Name, Type: f.Type.Arrow(), Nullable: true}
		if f.Type.ID == Date {
			fs[i].Metadata = dateMetadata
		} else if f.Type.Len > 0 {
			fs[i].Metadata = arrow.NewMetadata([]string{"hummer.type", "hummer.len"},
				[]string{strconv.FormatUint(uint64(f.Type.OID), 10), strconv.Itoa(int(f.Type.Len))})
		} else if f.Type.OID != 0 {
			fs[i].Metadata = pgMetadata[f.Type.OID]
		}
	}
	return arrow.NewSchema(fs, nil)
}

// dateMetadata marks the Arrow fields of DATE columns, whose arrays are
// timestamps: so that what reads a batch alone (the wire's row encoders) can
// tell a date from a timestamp.
var dateMetadata = arrow.NewMetadata([]string{"hummer.type"}, []string{"date"})

// IsDate reports whether f is the Arrow field of a DATE column.
func IsDate(f arrow.Field) bool {
	v, ok := f.Metadata.GetValue("hummer.type")
	return ok && v == "date"
}

// Index returns the position of the first column named name (case-insensitive), or -1.
func (s Schema) Index(name string) int {
	for i, f := range s {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func (s Schema) String() string {
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = f.Name + " " + f.Type.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

package types

import (
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Value is one scalar of a known Type, as literals appear in expressions and
// constants appear in plans. It serialises to JSON without losing its type.
// Which field holds the value depends on Type.ID:
//   - Bool: Bool
//   - Int64: Int
//   - Float64: Float
//   - Decimal: Dec (unscaled, scale from Type)
//   - String: Str
//   - Timestamp: Int (microseconds since the Unix epoch, no time zone)
type Value struct {
	Type  Type           `json:"type"`
	Null  bool           `json:"null,omitempty"`
	Bool  bool           `json:"b,omitempty"`
	Int   int64          `json:"i,omitempty"`
	Float float64        `json:"f,omitempty"`
	Str   string         `json:"str,omitempty"`
	Dec   decimal128.Num `json:"-"`
	DecHi int64          `json:"dh,omitempty"` // Dec's high half, for JSON
	DecLo uint64         `json:"dl,omitempty"` // Dec's low half, for JSON
}

// NullValue returns the NULL of type t.
func NullValue(t Type) Value { return Value{Type: t, Null: true} }

// IntValue returns a BIGINT value.
func IntValue(v int64) Value { return Value{Type: Int64Type, Int: v} }

// FloatValue returns a DOUBLE value.
func FloatValue(v float64) Value { return Value{Type: Float64Type, Float: v} }

// StringValue returns a TEXT value.
func StringValue(v string) Value { return Value{Type: StringType, Str: v} }

// BoolValue returns a BOOLEAN value.
func BoolValue(v bool) Value { return Value{Type: BoolType, Bool: v} }

// TimestampValue returns a TIMESTAMP value from microseconds since the epoch.
func TimestampValue(micros int64) Value { return Value{Type: TimestampType, Int: micros} }

// DateValue returns a DATE value from the microseconds of its midnight.
func DateValue(micros int64) Value { return Value{Type: DateType, Int: micros} }

// DecimalValue returns a DECIMAL value of type t from its unscaled number.
func DecimalValue(t Type, unscaled decimal128.Num) Value {
	return Value{Type: t, Dec: unscaled, DecHi: unscaled.HighBits(), DecLo: unscaled.LowBits()}
}

// Decimal returns the unscaled decimal number, whether v was built in memory or read
// back from JSON.
func (v Value) Decimal() decimal128.Num {
	if v.Dec == (decimal128.Num{}) {
		return decimal128.New(v.DecHi, v.DecLo)
	}
	return v.Dec
}

package expr

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hummer-db/hummer/exec/types"
)

var (
	tNull = types.NullType
	tBool = types.BoolType
	tInt  = types.Int64Type
	tF    = types.Float64Type
	tStr  = types.StringType
	tTS   = types.TimestampType
)

func dec(p, s int) types.Type { return types.DecimalType(p, s) }

func TestCoerce(t *testing.T) {
	tests := []struct {
		a, b types.Type
		want types.Type
		ok   bool
	}{
		{tInt, tInt, tInt, true},
		{tNull, tStr, tStr, true},
		{tTS, tNull, tTS, true},
		{tNull, tNull, tNull, true},
		{tInt, tF, tF, true},
		{dec(10, 2), tF, tF, true},
		{tInt, dec(10, 2), dec(21, 2), true},
		{dec(10, 2), dec(5, 4), dec(12, 4), true},
		{dec(38, 10), dec(38, 20), dec(38, 10), true},
		{tInt, dec(38, 37), dec(38, 19), true},
		{dec(10, 2), dec(38, 30), dec(38, 30), true},
		{tStr, tTS, tTS, true},
		{tTS, tStr, tTS, true},
		{tStr, tInt, types.Type{}, false},
		{tBool, tInt, types.Type{}, false},
		{tTS, tInt, types.Type{}, false},
	}
	for _, tt := range tests {
		got, ok := Coerce(tt.a, tt.b)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Coerce(%v, %v) = %v, %v; want %v, %v", tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name string
		args []types.Type
		want Signature
	}{
		{"+", []types.Type{tInt, tInt}, Signature{[]types.Type{tInt, tInt}, tInt}},
		{"+", []types.Type{tInt, tF}, Signature{[]types.Type{tF, tF}, tF}},
		{"+", []types.Type{tNull, tInt}, Signature{[]types.Type{tInt, tInt}, tInt}},
		{"+", []types.Type{tNull, tNull}, Signature{[]types.Type{tInt, tInt}, tInt}},
		{"+", []types.Type{dec(10, 2), tInt}, Signature{[]types.Type{dec(21, 2), dec(21, 2)}, dec(22, 2)}},
		{"*", []types.Type{dec(5, 2), dec(5, 2)}, Signature{[]types.Type{dec(5, 2), dec(5, 2)}, dec(11, 4)}},
		{"/", []types.Type{dec(5, 2), dec(5, 2)}, Signature{[]types.Type{dec(5, 2), dec(5, 2)}, dec(21, 16)}},
		{"/", []types.Type{dec(38, 4), dec(38, 4)}, Signature{[]types.Type{dec(38, 4), dec(38, 4)}, dec(38, 16)}},
		{"%", []types.Type{dec(5, 2), dec(5, 2)}, Signature{[]types.Type{dec(5, 2), dec(5, 2)}, dec(5, 2)}},
		{"*", []types.Type{dec(30, 20), dec(30, 20)}, Signature{[]types.Type{dec(30, 20), dec(30, 20)}, dec(38, 17)}},
		{"+", []types.Type{dec(38, 10), dec(38, 10)}, Signature{[]types.Type{dec(38, 10), dec(38, 10)}, dec(38, 9)}},
		{"neg", []types.Type{tF}, Signature{[]types.Type{tF}, tF}},
		{"=", []types.Type{tStr, tTS}, Signature{[]types.Type{tTS, tTS}, tBool}},
		{"<", []types.Type{tNull, tNull}, Signature{[]types.Type{tStr, tStr}, tBool}},
		{"and", []types.Type{tBool, tNull}, Signature{[]types.Type{tBool, tBool}, tBool}},
		{"is_null", []types.Type{tNull}, Signature{[]types.Type{tNull}, tBool}},
		{"in", []types.Type{tInt, tNull, dec(3, 1)}, Signature{[]types.Type{dec(20, 1), dec(20, 1), dec(20, 1)}, tBool}},
		{"case", []types.Type{tBool, tInt, tNull, tF, tNull}, Signature{[]types.Type{tBool, tF, tBool, tF, tF}, tF}},
		{"case", []types.Type{tBool, tNull, tNull}, Signature{[]types.Type{tBool, tStr, tStr}, tStr}},
		{"coalesce", []types.Type{tNull, tStr}, Signature{[]types.Type{tStr, tStr}, tStr}},
		{"like", []types.Type{tStr, tStr, tStr}, Signature{[]types.Type{tStr, tStr, tStr}, tBool}},
		{"substring", []types.Type{tStr, tInt}, Signature{[]types.Type{tStr, tInt}, tStr}},
		{"concat", []types.Type{tStr, tInt, tTS}, Signature{[]types.Type{tStr, tStr, tStr}, tStr}},
		{"||", []types.Type{tInt, tStr}, Signature{[]types.Type{tStr, tStr}, tStr}},
		{"round", []types.Type{dec(10, 4)}, Signature{[]types.Type{dec(10, 4)}, dec(7, 0)}},
		{"round", []types.Type{dec(10, 4), tInt}, Signature{[]types.Type{dec(10, 4), tInt}, dec(11, 4)}},
		{"round", []types.Type{tF, tInt}, Signature{[]types.Type{tF, tInt}, tF}},
		{"floor", []types.Type{dec(10, 4)}, Signature{[]types.Type{dec(10, 4)}, dec(7, 0)}},
		{"length", []types.Type{tStr}, Signature{[]types.Type{tStr}, tInt}},
		{"lower", []types.Type{tNull}, Signature{[]types.Type{tStr}, tStr}},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.name, tt.args)
		if err != nil {
			t.Errorf("Resolve(%s) error: %v", callText(tt.name, tt.args), err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Resolve(%s) = %v; want %v", callText(tt.name, tt.args), got, tt.want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name string
		args []types.Type
		kind error
		msg  string
	}{
		{"nosuch", []types.Type{tInt}, ErrUnknownFunction, "function nosuch(bigint) does not exist"},
		{"+", []types.Type{tStr, tInt}, ErrArgumentType, "operator does not exist: text + bigint"},
		{"neg", []types.Type{tStr}, ErrArgumentType, "operator does not exist: - text"},
		{"=", []types.Type{tInt, tStr}, ErrArgumentType, "operator does not exist: bigint = text"},
		{"lower", []types.Type{tInt}, ErrArgumentType, "function lower(bigint) does not exist"},
		{"and", []types.Type{tBool, tInt}, ErrArgumentType, "argument of AND must be type boolean, not type bigint"},
		{"is_true", []types.Type{tInt}, ErrArgumentType, "argument of IS TRUE must be type boolean, not type bigint"},
		{"case", []types.Type{tBool, tStr, tInt}, ErrArgumentType, "CASE types text and bigint cannot be matched"},
		{"coalesce", []types.Type{tInt, tBool}, ErrArgumentType, "COALESCE types bigint and boolean cannot be matched"},
		{"substring", []types.Type{tStr, tF}, ErrArgumentType, "function substring(text, double) does not exist"},
		{"||", []types.Type{tInt, tInt}, ErrArgumentType, "operator does not exist: bigint || bigint"},
		{"case", []types.Type{tBool, tInt}, ErrArgumentType, "function case(boolean, bigint) does not exist"},
	}
	for _, tt := range tests {
		_, err := Resolve(tt.name, tt.args)
		if !errors.Is(err, tt.kind) || err.Error() != tt.msg {
			t.Errorf("Resolve(%s) error = %v; want %q (%v)", callText(tt.name, tt.args), err, tt.msg, tt.kind)
		}
	}
}

func TestCanCast(t *testing.T) {
	all := []types.Type{tNull, tBool, tInt, tF, dec(10, 2), tStr, tTS}
	for _, from := range all {
		for _, to := range all {
			want := from == to || from.ID == types.Null || to.ID == types.String ||
				(from.ID == types.String && to.ID != types.Null) ||
				(from.IsNumeric() && to.IsNumeric()) ||
				(from.ID == types.Bool && to.ID == types.Int64) || (from.ID == types.Int64 && to.ID == types.Bool)
			if got := CanCast(from, to); got != want {
				t.Errorf("CanCast(%v, %v) = %v", from, to, got)
			}
		}
	}
}

package expr

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// Test helpers that build expressions the way the binder does: Resolve, then
// casts on the arguments whose type differs from the signature's.

func col(i int, t types.Type) *Expr { return Column(i, t, "") }

func lInt(v int64) *Expr        { return Literal(types.IntValue(v)) }
func lF(v float64) *Expr        { return Literal(types.FloatValue(v)) }
func lStr(s string) *Expr       { return Literal(types.StringValue(s)) }
func lBool(b bool) *Expr        { return Literal(types.BoolValue(b)) }
func lNull() *Expr              { return Literal(types.NullValue(types.NullType)) }
func lNullT(t types.Type) *Expr { return Literal(types.NullValue(t)) }

// lDec is a decimal literal of the given type from its text.
func lDec(s string, p, sc int) *Expr {
	t := types.DecimalType(p, sc)
	n, st := parseDecimal(s, p, sc)
	if st != parsed {
		panic("bad decimal literal " + s)
	}
	return Literal(types.DecimalValue(t, n))
}

// lTS is a timestamp literal from its text.
func lTS(s string) *Expr {
	v, err := parseTimestamp([]byte(s))
	if err != nil {
		panic(err)
	}
	return Literal(types.TimestampValue(v))
}

func cast(e *Expr, t types.Type) *Expr { return Cast(e, t) }

// fn resolves name over args and builds the call with the casts it asks for.
func fn(name string, args ...*Expr) *Expr {
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	sig, err := Resolve(name, ts)
	if err != nil {
		panic(err)
	}
	cast := make([]*Expr, len(args))
	for i, a := range args {
		cast[i] = Cast(a, sig.Args[i])
	}
	return Call(name, sig.Result, cast...)
}

// column is one input column: its type and its values as JSON.
type column struct {
	t    types.Type
	json string
}

func ints(json string) column           { return column{tInt, json} }
func floats(json string) column         { return column{tF, json} }
func strs(json string) column           { return column{tStr, json} }
func bools(json string) column          { return column{tBool, json} }
func decs(p, s int, json string) column { return column{dec(p, s), json} }
func tss(json string) column            { return column{tTS, json} }

// makeBatch builds a batch from JSON columns (all of one length).
func makeBatch(t testing.TB, mem memory.Allocator, cols ...column) arrow.RecordBatch {
	t.Helper()
	schema := make(types.Schema, len(cols))
	arrs := make([]arrow.Array, len(cols))
	rows := int64(-1)
	for i, c := range cols {
		schema[i] = types.Field{Name: string(rune('a' + i)), Type: c.t}
		a, _, err := array.FromJSON(mem, c.t.Arrow(), strings.NewReader(c.json))
		if err != nil {
			t.Fatalf("column %d %s: %v", i, c.json, err)
		}
		arrs[i] = a
		rows = int64(a.Len())
	}
	if rows < 0 {
		rows = 1
	}
	b := array.NewRecordBatch(schema.Arrow(), arrs, rows)
	for _, a := range arrs {
		a.Release()
	}
	return b
}

// render shows each row as FormatValue does.
func render(a arrow.Array) []string {
	out := make([]string, a.Len())
	for i := range out {
		out[i] = FormatValue(ValueOf(a, i))
	}
	return out
}

// evalCase is one expression over one batch and its expected rows, or the
// expected error text.
type evalTest struct {
	name string
	e    *Expr
	cols []column
	want []string // rendered rows
	err  string   // expected error message, if any
}

func runEvalTests(t *testing.T, tests []evalTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := makeBatch(t, mem, tt.cols...)
			defer b.Release()
			got, err := Eval(tt.e, b, mem)
			if tt.err != "" {
				if err == nil {
					got.Release()
					t.Fatalf("%s: got %v, want error %q", tt.e, render(got), tt.err)
				}
				if err.Error() != tt.err {
					t.Fatalf("%s: error %q, want %q", tt.e, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.e, err)
			}
			defer got.Release()
			checkResult(t, tt.e, got, b, tt.want)
			// Again over a slice of the batch, so that inputs with offsets are covered.
			if b.NumRows() >= 3 {
				sub := b.NewSlice(1, b.NumRows()-1)
				defer sub.Release()
				got2, err := Eval(tt.e, sub, mem)
				if err != nil {
					t.Fatalf("%s over a slice: %v", tt.e, err)
				}
				defer got2.Release()
				checkResult(t, tt.e, got2, sub, tt.want[1:len(tt.want)-1])
			}
		})
	}
}

func checkResult(t *testing.T, e *Expr, got arrow.Array, b arrow.RecordBatch, want []string) {
	t.Helper()
	if !arrow.TypeEqual(got.DataType(), e.Type.Arrow()) {
		t.Errorf("%s: result type %s, want %s", e, got.DataType(), e.Type.Arrow())
	}
	if int64(got.Len()) != b.NumRows() {
		t.Fatalf("%s: %d rows, want %d", e, got.Len(), b.NumRows())
	}
	if v, ok := got.(interface{ ValidateFull() error }); ok {
		if err := v.ValidateFull(); err != nil {
			t.Errorf("%s: invalid result array: %v", e, err)
		}
	}
	nulls := 0
	for i := range got.Len() {
		if got.IsNull(i) {
			nulls++
		}
	}
	if nulls != got.NullN() {
		t.Errorf("%s: NullN() = %d, bitmap has %d", e, got.NullN(), nulls)
	}
	if g := render(got); strings.Join(g, " | ") != strings.Join(want, " | ") {
		t.Errorf("%s\n got: %s\nwant: %s", e, strings.Join(g, " | "), strings.Join(want, " | "))
	}
}

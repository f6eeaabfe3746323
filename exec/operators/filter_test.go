package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var filterSchema = types.Schema{
	{Name: "x", Type: types.Int64Type}, {Name: "s", Type: types.StringType},
	{Name: "d", Type: types.DecimalType(10, 2)}, {Name: "b", Type: types.BoolType},
	{Name: "t", Type: types.TimestampType}, {Name: "f", Type: types.Float64Type},
}

const filterRows = `[
	{"x": 1, "s": "a", "d": "1.50", "b": true, "t": "2024-01-01 00:00:00", "f": 0.5},
	{"x": null, "s": null, "d": null, "b": null, "t": null, "f": null},
	{"x": 3, "s": "ccc", "d": "-2.25", "b": false, "t": "2024-01-03 00:00:00", "f": 1e20},
	{"x": 5, "s": "", "d": "0.00", "b": true, "t": "2024-01-05 00:00:00", "f": -1},
	{"x": 2, "s": "bb", "d": "9.99", "b": null, "t": "2024-01-02 00:00:00", "f": 2}
]`

func filterCol(i int) *expr.Expr { return expr.Column(i, filterSchema[i].Type, filterSchema[i].Name) }

// runFilter runs a filter of cfg over filterRows.
func runFilter(t *testing.T, cfg FilterConfig) *testkit.Collector {
	t.Helper()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, filterSchema, filterRows)
	defer testkit.Release(bs)
	c, err := testkit.Run(t, opTestNew(t, "filter", cfg, filterSchema), mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFilter(t *testing.T) {
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	all := []string{
		`[1,"a","1.50",true,"2024-01-01T00:00:00",0.5]`,
		`[null,null,null,null,null,null]`,
		`[3,"ccc","-2.25",false,"2024-01-03T00:00:00",100000000000000000000]`,
		`[5,"","0.00",true,"2024-01-05T00:00:00",-1]`,
		`[2,"bb","9.99",null,"2024-01-02T00:00:00",2]`,
	}
	tests := []struct {
		name string
		cond *expr.Expr
		want []string
	}{
		// A NULL comparison drops the row, as WHERE does.
		{"x > 2: contiguous rows", expr.Call(">", types.BoolType, filterCol(0), lit(2)), []string{all[2], all[3]}},
		{"x <> 3: scattered rows", expr.Call("<>", types.BoolType, filterCol(0), lit(3)), []string{all[0], all[3], all[4]}},
		{"b: NULL is false", filterCol(3), []string{all[0], all[3]}},
		{"s <> '': text", expr.Call("<>", types.BoolType, filterCol(1), expr.Literal(types.StringValue(""))),
			[]string{all[0], all[2], all[4]}},
		{"x is not null or true: all rows", expr.Call("or", types.BoolType,
			expr.Call("is_null", types.BoolType, filterCol(0)), expr.Literal(types.BoolValue(true))), all},
		{"x > 100: no rows", expr.Call(">", types.BoolType, filterCol(0), lit(100)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := runFilter(t, FilterConfig{Cond: tc.cond})
			testkit.Equal(t, "rows", c.Rows, tc.want)
			if len(c.Signals) != 1 || c.Signals[0].Kind != exec.EndOfStream {
				t.Errorf("signals %v", c.Signals)
			}
		})
	}
}

func TestFilterChangeKindsAndPassThrough(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, filterSchema, filterRows)
	defer testkit.Release(bs)
	bs[0].Ops = []exec.ChangeKind{exec.Insert, exec.Delete, exec.UpdateBefore, exec.UpdateAfter, exec.Delete}
	op := opTestNew(t, "filter", FilterConfig{Cond: expr.Call("<>", types.BoolType, filterCol(0),
		expr.Literal(types.IntValue(3)))}, filterSchema)
	c, err := testkit.Run(t, op, mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{
		`[1,"a","1.50",true,"2024-01-01T00:00:00",0.5]`,
		`update_after [5,"","0.00",true,"2024-01-05T00:00:00",-1]`,
		`delete [2,"bb","9.99",null,"2024-01-02T00:00:00",2]`,
	})

	// When every row passes, the batch itself goes on.
	ctx := context.Background()
	op = opTestNew(t, "filter", FilterConfig{Cond: expr.Literal(types.BoolValue(true))}, filterSchema)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	var got exec.Batch
	err = op.ProcessBatch(ctx, 0, bs[0], testkit.Func(func(b exec.Batch) error { got = b; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rec != bs[0].Rec {
		t.Errorf("an all-true filter copied its batch")
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Barrier, Checkpoint: 2}, &testkit.Collector{T: t}); err != nil {
		t.Fatal(err)
	}
}

func TestFilterNotBoolean(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, filterSchema, filterRows)
	defer testkit.Release(bs)
	op := opTestNew(t, "filter", FilterConfig{Cond: filterCol(0)}, filterSchema)
	if _, err := testkit.Run(t, op, mem, bs...); err == nil {
		t.Errorf("bigint condition: no error")
	}
}

// TestGatherStrings gathers text rows of every length from 0 to 40 bytes, in
// shuffled order with repeats and missing rows (-1, NULL), from a column and
// from a slice of it, and compares each value with the row it names: short
// strings move as whole words, and the last strings of the value buffer and
// longer ones by a copy.
func TestGatherStrings(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []string
	for n := range 41 {
		for range 3 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte('a' + rng.IntN(26))
			}
			vals = append(vals, string(b))
		}
	}
	rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	sb := array.NewStringBuilder(mem)
	sb.AppendValues(vals, nil)
	whole := sb.NewStringArray()
	sb.Release()
	defer whole.Release()
	sliced := array.NewSlice(whole, 7, int64(len(vals))-5).(*array.String)
	defer sliced.Release()
	for _, src := range []*array.String{whole, sliced} {
		idx := make([]int32, 0, 3*src.Len())
		for i := range src.Len() {
			idx = append(idx, int32(i))
		}
		idx = append(idx, int32(src.Len()-1), -1, 0, int32(src.Len()-1))
		for range src.Len() {
			idx = append(idx, int32(rng.IntN(src.Len()+1)-1))
		}
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		got, err := vector.GatherArray(mem, src, idx)
		if err != nil {
			t.Fatal(err)
		}
		g := got.(*array.String)
		if g.Len() != len(idx) {
			t.Fatalf("%d rows gathered, want %d", g.Len(), len(idx))
		}
		for j, i := range idx {
			switch {
			case i < 0 && !g.IsNull(j):
				t.Errorf("row %d (from -1) is %q, want NULL", j, g.Value(j))
			case i >= 0 && (g.IsNull(j) || g.Value(j) != src.Value(int(i))):
				t.Errorf("row %d (from %d) is %q, want %q", j, i, g.Value(j), src.Value(int(i)))
			}
		}
		got.Release()
	}
}

// TestFilterConjuncts: a condition of several conjuncts, evaluated one after
// another over the rows left (narrowed once at most half are), keeps exactly
// the rows every conjunct is true of, NULLs counting as false: checked row by
// row here over random rows, with change kinds.
func TestFilterConjuncts(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(5, 6))
	type row struct {
		x, y *int64
		s    *string
	}
	var rows []row
	var objs []string
	for i := range 3000 {
		var x, y *int64
		var s *string
		if r.IntN(10) > 0 {
			v := int64(r.IntN(100))
			x = &v
		}
		if r.IntN(10) > 0 {
			v := int64(r.IntN(100))
			y = &v
		}
		if r.IntN(10) > 0 {
			v := fmt.Sprintf("s%d", r.IntN(4))
			s = &v
		}
		rows = append(rows, row{x, y, s})
		js := func(p *int64) string {
			if p == nil {
				return "null"
			}
			return fmt.Sprint(*p)
		}
		ss := "null"
		if s != nil {
			ss = fmt.Sprintf("%q", *s)
		}
		objs = append(objs, fmt.Sprintf(`{"x": %s, "y": %s, "s": %s, "i": %d}`, js(x), js(y), ss, i))
	}
	schema := types.Schema{{Name: "x", Type: types.Int64Type}, {Name: "y", Type: types.Int64Type},
		{Name: "s", Type: types.StringType}, {Name: "i", Type: types.Int64Type}}
	col := func(i int) *expr.Expr { return expr.Column(i, schema[i].Type, schema[i].Name) }
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	// x < 80 AND (y > 30 OR s = 's1') AND x + y > 50 AND s <> 's3'
	cond := expr.Call("and", types.BoolType,
		expr.Call("<", types.BoolType, col(0), lit(80)),
		expr.Call("or", types.BoolType, expr.Call(">", types.BoolType, col(1), lit(30)),
			expr.Call("=", types.BoolType, col(2), expr.Literal(types.StringValue("s1")))),
		expr.Call(">", types.BoolType, expr.Call("+", types.Int64Type, col(0), col(1)), lit(50)),
		expr.Call("<>", types.BoolType, col(2), expr.Literal(types.StringValue("s3"))))
	var want []string
	for i, w := range rows {
		// Three-valued logic, as SQL's AND and OR have it: nil is NULL.
		b := func(v bool) *bool { return &v }
		and := func(a, c *bool) *bool {
			switch {
			case a != nil && !*a, c != nil && !*c:
				return b(false)
			case a == nil || c == nil:
				return nil
			}
			return b(true)
		}
		or := func(a, c *bool) *bool {
			switch {
			case a != nil && *a, c != nil && *c:
				return b(true)
			case a == nil || c == nil:
				return nil
			}
			return b(false)
		}
		var c1, c2a, c2b, c3, c4 *bool
		if w.x != nil {
			c1 = b(*w.x < 80)
		}
		if w.y != nil {
			c2a = b(*w.y > 30)
		}
		if w.s != nil {
			c2b, c4 = b(*w.s == "s1"), b(*w.s != "s3")
		}
		if w.x != nil && w.y != nil {
			c3 = b(*w.x+*w.y > 50)
		}
		if v := and(and(and(c1, or(c2a, c2b)), c3), c4); v != nil && *v {
			want = append(want, fmt.Sprint(i))
		}
	}
	// Batches of varied lengths, some not a multiple of eight or 64, so that
	// one batch's bits of the rows kept lie past the end of the next's.
	var batches []string
	sizes := []int{500, 7, 333, 64, 129, 1, 1000}
	for lo, k := 0, 0; lo < len(objs); lo, k = lo+sizes[k%len(sizes)], k+1 {
		hi := min(len(objs), lo+sizes[k%len(sizes)])
		batches = append(batches, "["+strings.Join(objs[lo:hi], ",")+"]")
	}
	bs := testkit.Batches(t, mem, schema, batches...)
	defer testkit.Release(bs)
	for _, b := range bs {
		b.Ops = make([]exec.ChangeKind, b.NumRows()) // all inserts, carried along
	}
	op := opTestNew(t, "filter", FilterConfig{Cond: cond}, schema)
	c, err := testkit.Run(t, op, mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range c.Rows {
		var vals []any
		if err := json.Unmarshal([]byte(row), &vals); err != nil {
			t.Fatalf("%s: %v", row, err)
		}
		got = append(got, fmt.Sprint(vals[3]))
	}
	if len(want) < 100 || len(want) > 2000 {
		t.Fatalf("a test that cannot tell: %d of %d rows kept", len(want), len(rows))
	}
	testkit.Equal(t, "rows kept", got, want)
}

// TestFilterRange: a lower and an upper bound of one column among other
// conjuncts are evaluated as one range (conjuncts pairs them) and keep the
// rows both hold for, NULLs counting as false: checked row by row here over
// random rows.
func TestFilterRange(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(7, 8))
	schema := types.Schema{{Name: "x", Type: types.Int64Type}, {Name: "s", Type: types.StringType}, {Name: "i", Type: types.Int64Type}}
	col := func(i int) *expr.Expr { return expr.Column(i, schema[i].Type, schema[i].Name) }
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	cmp := func(op string, a, b *expr.Expr) *expr.Expr { return expr.Call(op, types.BoolType, a, b) }
	// 20 <= x AND s <> 's3' AND x < 70
	conds := []*expr.Expr{cmp("<=", lit(20), col(0)), cmp("<>", col(1), expr.Literal(types.StringValue("s3"))), cmp("<", col(0), lit(70))}
	if steps := conjuncts(conds); len(steps) != 2 || steps[0].rng == nil || steps[1].rng != nil {
		t.Fatalf("conjuncts: %+v, want the range then s <> 's3'", steps)
	}
	var objs, want []string
	for i := range 1000 {
		x, s := "null", "null"
		var xv int64 = -1
		if r.IntN(8) > 0 {
			xv = int64(r.IntN(100))
			x = fmt.Sprint(xv)
		}
		sv := fmt.Sprintf("s%d", r.IntN(4))
		if r.IntN(8) > 0 {
			s = fmt.Sprintf("%q", sv)
		}
		objs = append(objs, fmt.Sprintf(`{"x": %s, "s": %s, "i": %d}`, x, s, i))
		if x != "null" && s != "null" && xv >= 20 && xv < 70 && sv != "s3" {
			want = append(want, fmt.Sprint(i))
		}
	}
	bs := testkit.Batches(t, mem, schema, "["+strings.Join(objs[:333], ",")+"]", "["+strings.Join(objs[333:], ",")+"]")
	defer testkit.Release(bs)
	op := opTestNew(t, "filter", FilterConfig{Cond: expr.Call("and", types.BoolType, conds...)}, schema)
	c, err := testkit.Run(t, op, mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range c.Rows {
		var vals []any
		if err := json.Unmarshal([]byte(row), &vals); err != nil {
			t.Fatalf("%s: %v", row, err)
		}
		got = append(got, fmt.Sprint(vals[2]))
	}
	if len(want) < 100 || len(want) > 900 {
		t.Fatalf("a test that cannot tell: %d of 1000 rows kept", len(want))
	}
	testkit.Equal(t, "rows kept", got, want)
}

// TestFilterKeep: with Keep the filter emits only those columns, in Keep's
// order, whichever path its rows take (all pass, a contiguous run,
// scattered rows gathered, conjuncts narrowing), with their change kinds.
func TestFilterKeep(t *testing.T) {
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	and := func(a, b *expr.Expr) *expr.Expr { return expr.Call("and", types.BoolType, a, b) }
	keep := []int{5, 1} // f, s: the condition reads x and b
	tests := []struct {
		name string
		cond *expr.Expr
		want []string
	}{
		{"all rows", expr.Literal(types.BoolValue(true)), []string{`[0.5,"a"]`, `[null,null]`, `[100000000000000000000,"ccc"]`, `[-1,""]`, `[2,"bb"]`}},
		{"contiguous", expr.Call(">", types.BoolType, filterCol(0), lit(2)), []string{`[100000000000000000000,"ccc"]`, `[-1,""]`}},
		{"scattered", expr.Call("<>", types.BoolType, filterCol(0), lit(3)), []string{`[0.5,"a"]`, `[-1,""]`, `[2,"bb"]`}},
		{"conjuncts", and(filterCol(3), expr.Call(">", types.BoolType, filterCol(0), lit(1))), []string{`[-1,""]`}},
		{"conjuncts, all rows", and(expr.Literal(types.BoolValue(true)), expr.Literal(types.BoolValue(true))),
			[]string{`[0.5,"a"]`, `[null,null]`, `[100000000000000000000,"ccc"]`, `[-1,""]`, `[2,"bb"]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testkit.Equal(t, "rows", runFilter(t, FilterConfig{Cond: tc.cond, Keep: keep}).Rows, tc.want)
		})
	}
	// Change kinds follow the kept rows.
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, filterSchema, filterRows)
	defer testkit.Release(bs)
	bs[0].Ops = []exec.ChangeKind{exec.Insert, exec.Delete, exec.UpdateBefore, exec.UpdateAfter, exec.Delete}
	op := opTestNew(t, "filter", FilterConfig{Cond: expr.Call("<>", types.BoolType, filterCol(0), lit(3)), Keep: []int{0}}, filterSchema)
	c, err := testkit.Run(t, op, mem, bs...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{`[1]`, `update_after [5]`, `delete [2]`})
}

// TestFilterConjunctOrder: comparisons of columns with constants are
// evaluated first, whatever the written order: x < 3 keeps rows 1 and 2
// before 10 / (x - 3) > 0 sees any row, so the division never meets x = 3
// (in the written order it would fail there).
func TestFilterConjunctOrder(t *testing.T) {
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	div := expr.Call("/", types.Int64Type, lit(10), expr.Call("-", types.Int64Type, filterCol(0), lit(3)))
	cond := expr.Call("and", types.BoolType,
		expr.Call(">", types.BoolType, div, lit(-6)),
		expr.Call("<", types.BoolType, filterCol(0), lit(3)))
	c := runFilter(t, FilterConfig{Cond: cond, Keep: []int{0}})
	testkit.Equal(t, "rows", c.Rows, []string{`[1]`})
}

package operators

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

func TestUnnestSplits(t *testing.T) {
	tests := []struct {
		fn, sep string
		in      []any // strings or nil
		want    []string
	}{
		// string_split, DuckDB semantics.
		{"string_split", " ", []any{"a b"}, []string{"a", "b"}},
		{"string_split", ",", []any{"a,,b", "a,", ",a"}, []string{"a", "", "b", "a", "", "", "a"}},
		{"string_split", ",", []any{"", nil, "x"}, []string{"", "x"}},
		{"string_split", "<>", []any{"a<>b<>", "<<>>"}, []string{"a", "b", "", "<", ">"}},
		{"string_split", "", []any{"héllo", ""}, []string{"h", "é", "l", "l", "o", ""}},
		// regexp_split_to_table, PostgreSQL semantics.
		{"regexp_split_to_table", "[[:space:]]+", []any{" a b", "", "a  b\t\n c "}, []string{"", "a", "b", "", "a", "b", "c", ""}},
		{"regexp_split_to_table", `\s+`, []any{"the quick brown fox", "v\vw"}, []string{"the", "quick", "brown", "fox", "v", "w"}},
		{"regexp_split_to_table", " +", []any{"a  b "}, []string{"a", "b", ""}},
		{"regexp_split_to_table", "", []any{"abc", ""}, []string{"a", "b", "c", ""}},
		{"regexp_split_to_table", "[0-9]+", []any{"a1b22c3"}, []string{"a", "b", "c", ""}},
		{"regexp_split_to_table", `\d`, []any{"a1b22c"}, []string{"a", "b", "", "c"}},
		{"regexp_split_to_table", "--", []any{"a--b---c"}, []string{"a", "b", "-c"}},
		{"regexp_split_to_table", "ü", []any{"aüb"}, []string{"a", "b"}},
		// The general engine: PostgreSQL's documented example, zero-length matches.
		{"regexp_split_to_table", `\s*`, []any{"the quick brown fox"},
			strings.Split("t,h,e,q,u,i,c,k,b,r,o,w,n,f,o,x", ",")},
		{"regexp_split_to_table", "x*", []any{"axbxxc"}, []string{"a", "b", "c"}},
		{"regexp_split_to_table", ".", []any{"ab", "a\nb"}, []string{"", "", "", "", "", "", ""}},
		{"regexp_split_to_table", "(?i)x", []any{"aXbxc"}, []string{"a", "b", "c"}},
		{"regexp_split_to_table", "^a", []any{"aba"}, []string{"", "ba"}},
		{"regexp_split_to_table", "[,;] ?", []any{"a, b;c"}, []string{"a", "b", "c"}},
	}
	s := types.Schema{{Name: "line", Type: types.StringType}}
	for _, tc := range tests {
		t.Run(tc.fn+"/"+tc.sep, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			var objs []string
			for _, v := range tc.in {
				js, _ := json.Marshal(map[string]any{"line": v})
				objs = append(objs, string(js))
			}
			bs := testkit.Batches(t, mem, s, "["+strings.Join(objs, ",")+"]")
			defer testkit.Release(bs)
			op := opTestNew(t, "unnest", UnnestConfig{Col: 0, Func: tc.fn, Sep: tc.sep}, s)
			c, err := testkit.Run(t, op, mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				js, _ := json.Marshal([]string{w})
				want[i] = string(js)
			}
			testkit.Equal(t, "pieces", c.Rows, want)
		})
	}
}

func TestUnnestRepeatsOtherColumns(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	s := types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "line", Type: types.StringType},
		{Name: "tag", Type: types.StringType}}
	rec := testkit.Record(t, mem, s, `[
		{"id": 1, "line": "a b", "tag": "x"},
		{"id": 2, "line": null, "tag": "y"},
		{"id": null, "line": "c", "tag": null},
		{"id": 4, "line": "d e f", "tag": "z"}]`)
	defer rec.Release()
	op := opTestNew(t, "unnest", UnnestConfig{Col: 1, Func: "string_split", Sep: " "}, s)
	c, err := testkit.Run(t, op, mem, exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.Insert, exec.Insert, exec.Delete, exec.UpdateAfter}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{
		`[1,"a","x"]`, `[1,"b","x"]`,
		`delete [null,"c",null]`,
		`update_after [4,"d","z"]`, `update_after [4,"e","z"]`, `update_after [4,"f","z"]`,
	})
	if len(c.Signals) != 1 || c.Signals[0].Kind != exec.EndOfStream {
		t.Errorf("signals %v", c.Signals)
	}
}

func TestUnnestSlicedInput(t *testing.T) {
	// A sliced input (offset into its buffers) and a batch of only NULLs.
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	s := types.Schema{{Name: "line", Type: types.StringType}}
	rec := testkit.Record(t, mem, s, `[{"line": "skip me"}, {"line": "a b"}, {"line": "c"}, {"line": "skip"}]`)
	defer rec.Release()
	sl := rec.NewSlice(1, 3)
	defer sl.Release()
	nulls := testkit.Record(t, mem, s, `[{"line": null}]`)
	defer nulls.Release()
	op := opTestNew(t, "unnest", UnnestConfig{Col: 0, Func: "regexp_split_to_table", Sep: `\s+`}, s)
	c, err := testkit.Run(t, op, mem, exec.Batch{Rec: sl}, exec.Batch{Rec: nulls})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{`["a"]`, `["b"]`, `["c"]`})
}

func TestUnnestErrors(t *testing.T) {
	s := types.Schema{{Name: "line", Type: types.StringType}}
	for _, cfg := range []UnnestConfig{
		{Col: 0, Func: "explode", Sep: " "},
		{Col: 0, Func: "regexp_split_to_table", Sep: "("},
		{Col: 3, Func: "string_split", Sep: " "},
	} {
		if _, err := builtins().NewOperator(opTestSpec("unnest", cfg, s)); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	is := types.Schema{{Name: "n", Type: types.Int64Type}}
	bs := testkit.Batches(t, mem, is, `[{"n": 1}]`)
	defer testkit.Release(bs)
	op := opTestNew(t, "unnest", UnnestConfig{Col: 0, Func: "string_split", Sep: " "}, s)
	if _, err := testkit.Run(t, op, mem, bs...); err == nil {
		t.Errorf("unnest of a bigint column: no error")
	}
}

// opTestChain is the collector of a fused chain: it pushes into the next operator.
type opTestChain struct {
	op   exec.Operator
	next exec.Collector
}

func (c opTestChain) Collect(ctx context.Context, b exec.Batch) error {
	return c.op.ProcessBatch(ctx, 0, b, c.next)
}

func (c opTestChain) CollectSignal(ctx context.Context, s exec.Signal) error {
	return c.op.ProcessSignal(ctx, 0, s, c.next)
}

// BenchmarkUnnestCount is WordCount's core on the King James Bible: split lines
// (already lower-cased) into words and pre-aggregate count(*) by word, as the
// partial half of a two-phase aggregation does before the exchange.
func BenchmarkUnnestCount(b *testing.B) {
	raw, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		b.Fatalf("corpus: %v", err)
	}
	lines := strings.Split(strings.ToLower(string(raw)), "\n")
	mem := memory.NewGoAllocator()
	line := types.Schema{{Name: "line", Type: types.StringType}}
	var batches []exec.Batch
	const perBatch = 4096
	for i := 0; i < len(lines); i += perBatch {
		sb := array.NewStringBuilder(mem)
		sb.AppendValues(lines[i:min(i+perBatch, len(lines))], nil)
		col := sb.NewArray()
		sb.Release()
		batches = append(batches, exec.Batch{Rec: array.NewRecordBatch(line.Arrow(), []arrow.Array{col}, int64(col.Len()))})
		col.Release()
	}
	defer testkit.Release(batches)
	aggs := []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}
	partialOut := PartialSchema(line, aggs, line)
	for _, cfg := range []UnnestConfig{
		{Col: 0, Func: "string_split", Sep: " "},
		{Col: 0, Func: "regexp_split_to_table", Sep: "[[:space:]]+"},
	} {
		b.Run(cfg.Func, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				un := opTestNew(b, "unnest", cfg, line)
				agg := opTestNew(b, "hash_agg", HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Phase: AggPartial}, partialOut)
				groups := 0
				sink := testkit.Func(func(bt exec.Batch) error { groups += bt.NumRows(); return nil })
				chain := opTestChain{op: agg, next: sink}
				tc := testkit.TaskContext(mem)
				if err := un.Open(ctx, tc); err != nil {
					b.Fatal(err)
				}
				if err := agg.Open(ctx, tc); err != nil {
					b.Fatal(err)
				}
				for _, bt := range batches {
					if err := un.ProcessBatch(ctx, 0, bt, chain); err != nil {
						b.Fatal(err)
					}
				}
				if err := un.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, chain); err != nil {
					b.Fatal(err)
				}
				un.Close(ctx)
				agg.Close(ctx)
				if groups < 10000 {
					b.Fatalf("%d words", groups)
				}
			}
		})
	}
}

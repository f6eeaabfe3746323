package operators

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var sortSchema = types.Schema{
	{Name: "a", Type: types.Int64Type},
	{Name: "s", Type: types.StringType},
	{Name: "f", Type: types.Float64Type},
	{Name: "id", Type: types.Int64Type},
}

// Rows are tagged with id, so ties show their arrival order.
var sortInput = []string{
	`[{"a": 2, "s": "b", "f": 1.5, "id": 1}, {"a": null, "s": "a", "f": null, "id": 2}, {"a": 1, "s": "B", "f": -2, "id": 3}]`,
	`[{"a": 2, "s": null, "f": "NaN", "id": 4}, {"a": 1, "s": "b", "f": 0, "id": 5}]`,
	`[{"a": null, "s": "", "f": 10, "id": 6}, {"a": 3, "s": "ab", "f": -1e9, "id": 7}]`,
}

// sortCases are sort configs over sortInput and the ids they give, worked out
// by hand from PostgreSQL's order.
var sortCases = []struct {
	name string
	cfg  SortConfig
	want []int // ids
}{
	{"a asc, NULLs last, stable ties", SortConfig{Keys: []SortKeySpec{{Col: 0}}, Limit: -1}, []int{3, 5, 1, 4, 7, 2, 6}},
	{"a desc NULLs first", SortConfig{Keys: []SortKeySpec{{Col: 0, Desc: true, NullsFirst: true}}, Limit: -1},
		[]int{2, 6, 7, 1, 4, 3, 5}},
	{"a desc NULLs last", SortConfig{Keys: []SortKeySpec{{Col: 0, Desc: true}}, Limit: -1}, []int{7, 1, 4, 3, 5, 2, 6}},
	{"a asc NULLs first", SortConfig{Keys: []SortKeySpec{{Col: 0, NullsFirst: true}}, Limit: -1}, []int{2, 6, 3, 5, 1, 4, 7}},
	// Bytes order: "" < "B" < "a" < "ab" < "b".
	{"s asc (C collation)", SortConfig{Keys: []SortKeySpec{{Col: 1}}, Limit: -1}, []int{6, 3, 2, 7, 1, 5, 4}},
	{"a asc, s desc", SortConfig{Keys: []SortKeySpec{{Col: 0}, {Col: 1, Desc: true}}, Limit: -1}, []int{5, 3, 1, 4, 7, 2, 6}},
	// NaN sorts above every number.
	{"f asc", SortConfig{Keys: []SortKeySpec{{Col: 2}}, Limit: -1}, []int{7, 3, 5, 1, 6, 4, 2}},
	{"f desc NULLs first", SortConfig{Keys: []SortKeySpec{{Col: 2, Desc: true, NullsFirst: true}}, Limit: -1},
		[]int{2, 4, 6, 1, 5, 3, 7}},
	{"limit 3", SortConfig{Keys: []SortKeySpec{{Col: 0}}, Limit: 3}, []int{3, 5, 1}},
	{"offset 2 limit 3", SortConfig{Keys: []SortKeySpec{{Col: 0}}, Offset: 2, Limit: 3}, []int{1, 4, 7}},
	{"offset 5, no limit", SortConfig{Keys: []SortKeySpec{{Col: 0}}, Offset: 5, Limit: -1}, []int{2, 6}},
	{"offset past the end", SortConfig{Keys: []SortKeySpec{{Col: 0}}, Offset: 7, Limit: -1}, nil},
	{"limit 0", SortConfig{Keys: []SortKeySpec{{Col: 0}}, Limit: 0}, nil},
	{"no keys keeps order", SortConfig{Limit: -1}, []int{1, 2, 3, 4, 5, 6, 7}},
}

func TestSort(t *testing.T) {
	for _, tc := range sortCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			bs := testkit.Batches(t, mem, sortSchema, sortInput...)
			defer testkit.Release(bs)
			op := opTestNew(t, "sort", tc.cfg, sortSchema)
			c, err := testkit.Run(t, op, mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range c.Rows {
				var id int
				fmt.Sscanf(r[len(r)-3:], ",%d]", &id)
				ids = append(ids, fmt.Sprint(id))
			}
			var want []string
			for _, id := range tc.want {
				want = append(want, fmt.Sprint(id))
			}
			testkit.Equal(t, "ids", ids, want)
			if len(c.Signals) != 1 || c.Signals[0].Kind != exec.EndOfStream {
				t.Errorf("signals %v", c.Signals)
			}
		})
	}
}

func TestSortRowsAndSignals(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	bs := testkit.Batches(t, mem, sortSchema, sortInput[:2]...)
	defer testkit.Release(bs)
	op := opTestNew(t, "sort", SortConfig{Keys: []SortKeySpec{{Col: 1, Desc: true}}, Limit: -1}, sortSchema)
	ctx := context.Background()
	c := &testkit.Collector{T: t}
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	bs[1].Ops = []exec.ChangeKind{exec.Delete, exec.Insert}
	for _, b := range bs {
		if err := op.ProcessBatch(ctx, 0, b, c); err != nil {
			t.Fatal(err)
		}
	}
	barrier := exec.Signal{Kind: exec.Barrier, Checkpoint: 7}
	if err := op.ProcessSignal(ctx, 0, barrier, c); err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 0 || len(c.Signals) != 1 || c.Signals[0] != barrier {
		t.Fatalf("before end of stream: rows %v signals %v", c.Rows, c.Signals)
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		t.Fatal(err)
	}
	// Desc with NullsFirst unset: NULLs last. Change kinds follow their rows.
	testkit.Equal(t, "rows", c.Rows, []string{
		`[2,"b",1.5,1]`, `[1,"b",0,5]`, `[null,"a",null,2]`, `[1,"B",-2,3]`, `delete [2,null,"NaN",4]`,
	})
}

func TestSortLarge(t *testing.T) {
	// More rows than one output batch: descending over a reversed sequence.
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	const n = vector.OutBatchRows + 1000
	b := array.NewInt64Builder(mem)
	for i := range n {
		b.Append(int64((i * 7919) % n))
	}
	col := b.NewArray()
	b.Release()
	s := types.Schema{{Name: "a", Type: types.Int64Type}}
	rec := array.NewRecordBatch(s.Arrow(), []arrow.Array{col}, n)
	col.Release()
	defer rec.Release()
	op := opTestNew(t, "sort", SortConfig{Keys: []SortKeySpec{{Col: 0, Desc: true}}, Limit: -1}, s)
	c, err := testkit.Run(t, op, mem, exec.Batch{Rec: rec})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != n || c.Batches != 2 {
		t.Fatalf("%d rows in %d batches", len(c.Rows), c.Batches)
	}
	for i, r := range c.Rows {
		if r != fmt.Sprintf("[%d]", n-1-i) {
			t.Fatalf("row %d is %s", i, r)
		}
	}
}

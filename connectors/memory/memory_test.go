package memory

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var schema = types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}}

func record(t *testing.T, alloc memory.Allocator, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(alloc, schema.Arrow(), strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestSource(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	store := NewStore()
	defer store.Close()
	var recs []arrow.RecordBatch
	for _, rows := range []string{
		`[{"a": 0, "b": "x"}]`,
		`[{"a": 1, "b": null}, {"a": 2, "b": "y"}]`,
		`[{"a": 3, "b": "z"}]`,
		`[]`,
		`[{"a": 4, "b": "w"}]`,
	} {
		recs = append(recs, record(t, mem, rows))
	}
	if err := store.Put("t", schema, recs...); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release() // the store keeps its own references
	}
	r := exec.NewRegistry()
	operators.Register(r)
	Register(r, store)

	for _, tc := range []struct {
		n    int
		cols []int
		want [][]string // per subtask
	}{
		{n: 1, want: [][]string{{"0|x", "1|NULL", "2|y", "3|z", "4|w"}}},
		{n: 2, want: [][]string{{"0|x", "3|z", "4|w"}, {"1|NULL", "2|y"}}},
		{n: 3, cols: []int{1}, want: [][]string{{"x"}, {"NULL", "y", "w"}, {"z"}}},
		{n: 2, cols: []int{}, want: [][]string{{"", "", ""}, {"", ""}}},
	} {
		for i := range tc.n {
			src, err := r.NewSource(exec.ConnectorSpec{Connector: Name, URL: "memory://t", Schema: schema, Columns: tc.cols})
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Open(context.Background(), conntest.TaskContext(t, mem, i, tc.n)); err != nil {
				t.Fatal(err)
			}
			var out conntest.Collector
			if err := src.Run(context.Background(), &out); err != nil {
				t.Fatal(err)
			}
			src.Close()
			src.Close()
			if got := out.Rows(); !slices.Equal(got, tc.want[i]) {
				t.Errorf("n=%d cols=%v subtask %d: got %q, want %q", tc.n, tc.cols, i, got, tc.want[i])
			}
			out.Release()
		}
	}

	// Dropping the table does not disturb a source that has opened it.
	src, _ := r.NewSource(exec.ConnectorSpec{Connector: Name, URL: "memory://t", Schema: schema})
	if err := src.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1)); err != nil {
		t.Fatal(err)
	}
	store.Drop("t")
	var out conntest.Collector
	if err := src.Run(context.Background(), &out); err != nil || out.NumRows() != 5 {
		t.Errorf("after Drop: %d rows, %v", out.NumRows(), err)
	}
	out.Release()
	src.Close()

	// A table nothing has written is empty.
	src, _ = r.NewSource(exec.ConnectorSpec{Connector: Name, URL: "memory://t", Schema: schema})
	if err := src.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1)); err != nil {
		t.Fatal(err)
	}
	var none conntest.Collector
	if err := src.Run(context.Background(), &none); err != nil || none.NumRows() != 0 {
		t.Errorf("a table never written: %d rows, %v", none.NumRows(), err)
	}
	none.Release()
	src.Close()
}

// TestSink writes a changelog through the sink and reads it back from the store
// and through a source.
func TestSink(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	store := NewStore()
	defer store.Close()
	r := exec.NewRegistry()
	operators.Register(r)
	Register(r, store)
	c := exec.ConnectorSpec{Connector: Name, URL: "memory://out", Schema: schema}
	k, err := r.NewSink(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1)); err != nil {
		t.Fatal(err)
	}
	ops := []exec.ChangeKind{exec.Insert, exec.UpdateBefore, exec.UpdateAfter}
	rec := record(t, mem, `[{"a": 1, "b": "x"}, {"a": 1, "b": "x"}, {"a": 2, "b": "x"}]`)
	if err := k.ProcessBatch(context.Background(), 0, exec.Batch{Rec: rec, Ops: ops}, nil); err != nil {
		t.Fatal(err)
	}
	ops[0] = exec.Delete // the store must have copied the change kinds
	rec.Release()
	var sig conntest.Collector
	if err := k.ProcessSignal(context.Background(), 0, exec.Signal{Kind: exec.EndOfStream}, &sig); err != nil || len(sig.Signals) != 1 {
		t.Errorf("signal not forwarded: %v", err)
	}
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"1|x", "-1|x", "+2|x"}
	batches, ok := store.Batches("out")
	if got := conntest.Rows(batches); !ok || !slices.Equal(got, want) {
		t.Errorf("store holds %q, want %q", got, want)
	}
	for _, b := range batches {
		b.Rec.Release()
	}
	src, _ := r.NewSource(c)
	if err := src.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1)); err != nil {
		t.Fatal(err)
	}
	var out conntest.Collector
	if err := src.Run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.Rows(); !slices.Equal(got, want) {
		t.Errorf("source reads %q, want %q", got, want)
	}
	out.Release()
	src.Close()

	// A sink into a table of other types fails at Open.
	other := exec.ConnectorSpec{Connector: Name, URL: "memory://out", Schema: types.Schema{{Name: "a", Type: types.BoolType}}}
	k2, _ := r.NewSink(other)
	if err := k2.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1)); err == nil {
		t.Error("sink into a table of other types opened")
	}
	// Put refuses batches that do not match the schema.
	bad := record(t, mem, `[{"a": 1, "b": "x"}]`)
	defer bad.Release()
	if err := store.Put("p", types.Schema{{Name: "a", Type: types.Int64Type}}, bad); err == nil {
		t.Error("Put of a mismatched batch succeeded")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		url string
		err string
	}{
		{url: "memory://t"},
		{url: "memory://my_table.v2"},
		{url: "memory://", err: "want memory://<name>"},
		{url: "memory:t", err: "want memory://<name>"},
		{url: "file:///t", err: "want memory://<name>"},
		{url: "memory://a/b", err: "without '/'"},
		{url: "memory://t?x=1", err: `unknown option "x" (it takes no options)`},
	} {
		err := Validate(exec.ConnectorSpec{Connector: Name, URL: tc.url, Schema: schema})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, spec.ErrBadOption)):
			t.Errorf("%s: error %v, want ErrBadOption with %q", tc.url, err, tc.err)
		}
	}
}

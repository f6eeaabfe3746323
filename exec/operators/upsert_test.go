package operators

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

var upsertSchema = types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "v", Type: types.StringType}}

// upsertStep feeds one batch of rows ("[1,\"a\"]" upserts, "-1" deletes of key
// 1) and checks what comes out.
func upsertStep(t *testing.T, op exec.Operator, rows []string, want []string) {
	t.Helper()
	mem := testkit.Mem()
	var objs []string
	var ops []exec.ChangeKind
	for _, r := range rows {
		var k int64
		if _, err := fmt.Sscanf(r, "-%d", &k); err == nil {
			objs = append(objs, fmt.Sprintf(`{"k": %d, "v": null}`, k))
			ops = append(ops, exec.Delete)
			continue
		}
		objs = append(objs, r)
		ops = append(ops, exec.Insert)
	}
	js := "["
	for i, o := range objs {
		if i > 0 {
			js += ","
		}
		js += o
	}
	bs := testkit.Batches(t, mem, upsertSchema, js+"]")
	defer testkit.Release(bs)
	bs[0].Ops = ops
	c := &testkit.Collector{T: t}
	if err := op.ProcessBatch(context.Background(), 0, bs[0], c); err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, fmt.Sprint(rows), c.Rows, want)
}

func TestUpsert(t *testing.T) {
	ctx := context.Background()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	open := func() exec.Operator {
		op := opTestNew(t, "upsert", UpsertConfig{Key: []int{0}}, upsertSchema)
		if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := open()
	defer op.Close(ctx)
	// Within a batch the last change of a key counts.
	upsertStep(t, op, []string{`{"k": 1, "v": "a"}`, `{"k": 2, "v": "b"}`, `{"k": 1, "v": "c"}`},
		[]string{`[2,"b"]`, `[1,"c"]`})
	// An update retracts the old row; a delete its row; a delete of a key
	// not held, nothing; a NULL key is dropped.
	upsertStep(t, op, []string{`{"k": 2, "v": "b"}`, `{"k": 1, "v": "d"}`, "-3", "-2", `{"k": null, "v": "x"}`},
		[]string{`update_before [1,"c"]`, `delete [2,"b"]`, `update_after [1,"d"]`})
	// The same row again: nothing; a deleted key comes back as an insert.
	upsertStep(t, op, []string{`{"k": 1, "v": "d"}`, `{"k": 2, "v": "e"}`}, []string{`[2,"e"]`})

	// A checkpoint's rows, restored into a new operator, go on from there.
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	op2 := open()
	defer op2.Close(ctx)
	if err := op2.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
		t.Fatal(err)
	}
	upsertStep(t, op2, []string{`{"k": 1, "v": "f"}`, `{"k": 2, "v": "e"}`}, []string{`update_before [1,"d"]`, `update_after [1,"f"]`})
	if err := op2.(exec.Checkpointed).RestoreState(ctx, []byte("junk")); err == nil {
		t.Error("restoring junk: no error")
	}
}

// TestUpsertCompacts updates one key more times than the compaction
// threshold, so that the rows of old versions are dropped, and checks that
// the current row is still the one retracted next.
func TestUpsertCompacts(t *testing.T) {
	ctx := context.Background()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	op := opTestNew(t, "upsert", UpsertConfig{Key: []int{0}}, upsertSchema)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	const versions = 1<<16 + 5000
	kb, vb := array.NewInt64Builder(mem), array.NewStringBuilder(mem)
	for i := range versions {
		kb.Append(int64(i % 2)) // keys 0 and 1, alternating
		vb.Append(fmt.Sprint("v", i))
	}
	cols := []arrow.Array{kb.NewArray(), vb.NewArray()}
	kb.Release()
	vb.Release()
	rec := array.NewRecordBatch(upsertSchema.Arrow(), cols, versions)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	c := &testkit.Collector{T: t}
	// One version per batch.
	for i := range versions {
		one := rec.NewSlice(int64(i), int64(i+1))
		err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: one}, c)
		one.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := op.(*upsertOp).rows.Len(); n > 2*2+(1<<16)+1 {
		t.Errorf("%d rows held for 2 keys: not compacted", n)
	}
	// Every update retracted its key's version before, across the
	// compaction too.
	var befores []string
	for _, r := range c.Rows {
		if strings.HasPrefix(r, "update_before") {
			befores = append(befores, r)
		}
	}
	if len(befores) != versions-2 {
		t.Fatalf("%d updates, want %d", len(befores), versions-2)
	}
	for i, r := range befores {
		if want := fmt.Sprintf(`update_before [%d,"v%d"]`, i%2, i); r != want {
			t.Fatalf("update %d retracted %s, want %s", i+2, r, want)
		}
	}
	upsertStep(t, op, []string{`{"k": 0, "v": "last"}`}, []string{fmt.Sprintf(`update_before [0,"v%d"]`, versions-2), `update_after [0,"last"]`})
}

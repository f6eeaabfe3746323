package operators

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/types"
)

// TestStreamJoinDiskLarge: an inner stream join on the disk backend whose
// held rows take more than four times its --state-memory: 40000 rows a
// side over 10000 keys (4 rows of each side per key), then every other left
// row deleted. The output, applied, must be exactly the 16 pairs per key,
// then 8, counted here by hand; the DB must hold more than four times the
// memory.
func TestStreamJoinDiskLarge(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	const keys, perKey = 10000, 4
	const stateMemory = 256 << 10
	cfg := sjConfig("inner", false)
	cfg.StateBackend = StateDisk
	out := append(append(types.Schema{}, sjLeft...), sjRight...)
	r := newDiskRun(t, mem, stateMemory, "stream_join", cfg, out, func(op *streamJoinOp) *disk.DB { return op.disk.db })
	defer r.Close()
	got := map[string]int{}
	feed := func(s int, lo, hi, step int, del bool) {
		t.Helper()
		var objs []string
		var ops []exec.ChangeKind
		for i := lo; i < hi; i += step {
			name := "lk"
			if s == 1 {
				name = "rk"
			}
			objs = append(objs, fmt.Sprintf(`{"%s": %d, "%sv": "row %d"}`, name, i%keys, name[:1], i))
			if del {
				ops = append(ops, exec.Delete)
			} else {
				ops = append(ops, exec.Insert)
			}
		}
		sjFold(t, got, r.FeedChanges(s, sjSide(s), objs, ops))
	}
	const rows = keys * perKey
	for lo := 0; lo < rows; lo += 500 {
		feed(0, lo, lo+500, 1, false)
		feed(1, lo, lo+500, 1, false)
	}
	want := func(leftStep int) map[string]int {
		w := map[string]int{}
		for l := 0; l < rows; l += leftStep {
			for r := l % keys; r < rows; r += keys {
				w[fmt.Sprintf(`[%d,"row %d",%d,"row %d"]`, l%keys, l, l%keys, r)]++
			}
		}
		return w
	}
	check := func(what string, w map[string]int) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("%s: %d joined rows, want %d", what, len(got), len(w))
		}
		for r, n := range w {
			if got[r] != n {
				t.Fatalf("%s: row %s %d times, want %d", what, r, got[r], n)
			}
		}
	}
	check("after the inserts", want(1))
	for lo := 0; lo < rows; lo += 1000 {
		feed(0, lo+1, lo+1000, 2, true)
	}
	check("after the deletes", want(2))
	if r.Op.disk.evictions == 0 {
		t.Fatal("the cache was never emptied")
	}
	r.Must(r.Op.writeBack())
	if held := r.DBBytes(); held < 4*stateMemory {
		t.Fatalf("the join holds %d bytes, not four times its %d", held, stateMemory)
	}
}

// TestStreamJoinStateLimit: a stream join on the memory backend whose rows
// outgrow the TaskManager's bound fails with ErrOutOfMemory naming the
// operator and state_backend = 'disk'.
func TestStreamJoinStateLimit(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	out := append(append(types.Schema{}, sjLeft...), sjRight...)
	spec := opTestSpec("stream_join", sjConfig("inner", false), out)
	spec.Label = "stream_join inner on lk = rk"
	op, err := builtins().NewOperator(spec)
	if err != nil {
		t.Fatal(err)
	}
	tc := testkit.TaskContext(mem)
	tc.StateLimit = 64 << 10
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	var objs []string
	for i := range 5000 {
		objs = append(objs, fmt.Sprintf(`{"lk": %d, "lv": "row %d"}`, i, i))
	}
	rec := testkit.Record(t, mem, sjLeft, "["+strings.Join(objs, ",")+"]")
	defer rec.Release()
	err = op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, &testkit.Collector{T: t})
	if !errors.Is(err, exec.ErrOutOfMemory) || !strings.Contains(err.Error(), spec.Label) || !strings.Contains(err.Error(), "SET state_backend = 'disk'") {
		t.Fatalf("ProcessBatch: %v", err)
	}
}

// failingFiles is a checkpoint store whose uploads fail while full is set,
// as a full disk's would.
type failingFiles struct {
	exec.StateFiles
	full bool
}

func (f *failingFiles) Upload(ctx context.Context, name, path string) error {
	if f.full {
		return fmt.Errorf("write %s: no space left on device", name)
	}
	return f.StateFiles.Upload(ctx, name, path)
}

// TestHashAggDiskCheckpointFails: a checkpoint whose upload fails (a full
// disk) is an error of that checkpoint only: the operator goes on, its next
// checkpoint uploads what the failed one did not, and a restore from it is
// exact.
func TestHashAggDiskCheckpointFails(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	files := &failingFiles{StateFiles: stateTestFiles(t)}
	tc := testkit.TaskContext(mem)
	tc.StateFiles, tc.SpillDir = files, t.TempDir()
	cfg := HashAggConfig{GroupBy: []int{0}, Emit: AggEmitUpdates, StateBackend: StateDisk,
		Aggs: []AggSpec{{Func: "count", Arg: -1, Type: types.Int64Type}}}
	out := aggTestOut(types.StringType, types.Int64Type)
	open := func() *hashAggOp {
		op := opTestNew(t, "hash_agg", cfg, out).(*hashAggOp)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()
	batches := testkit.Batches(t, mem, aggTestIn,
		`[{"k": "a"}, {"k": "b"}, {"k": "a"}]`, `[{"k": "c"}, {"k": "a"}]`, `[{"k": "b"}]`)
	defer testkit.Release(batches)
	view := &aggTestView{t: t}
	// step takes a checkpoint as a task does: the DB's on the operator's
	// goroutine, its upload after.
	step := func(b exec.Batch, id int64) ([]byte, int64, error) {
		t.Helper()
		if err := op.ProcessBatch(ctx, 0, b, view); err != nil {
			t.Fatal(err)
		}
		if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Barrier, Checkpoint: id}, view); err != nil {
			t.Fatal(err)
		}
		finish, err := op.SnapshotStateAsync(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		return finish(ctx)
	}
	if _, _, err := step(batches[0], 1); err != nil {
		t.Fatal(err)
	}
	files.full = true
	if _, _, err := step(batches[1], 2); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("checkpoint on a full disk: %v", err)
	}
	files.full = false
	snap, uploaded, err := step(batches[2], 3)
	if err != nil {
		t.Fatal(err)
	}
	// Checkpoint 3 uploaded the files checkpoint 2 could not (the checkpoint's
	// size counts them).
	if uploaded <= 0 {
		t.Errorf("checkpoint 3 uploaded %d bytes", uploaded)
	}
	op.Close(ctx)
	op = open()
	if err := op.RestoreState(ctx, snap); err != nil {
		t.Fatal(err)
	}
	// One more "a" after the restore: its count goes from 3 to 4.
	more := testkit.Batches(t, mem, aggTestIn, `[{"k": "a"}]`)
	defer testkit.Release(more)
	if err := op.ProcessBatch(ctx, 0, more[0], view); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, view); err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "counts", view.rows(), []string{`["a",4]`, `["b",2]`, `["c",1]`})
}

// TestStreamJoinDiskFinal: once both inputs ended, a disk-backed join's final
// snapshot (the state a task ends with) restores into a fresh operator;
// before that it is an error.
func TestStreamJoinDiskFinal(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	cfg := sjConfig("full", false)
	cfg.StateBackend = StateDisk
	out := append(append(types.Schema{}, sjLeft...), sjRight...)
	tc := testkit.TaskContext(mem)
	tc.StateFiles, tc.SpillDir = stateTestFiles(t), t.TempDir()
	op := opTestNew(t, "stream_join", cfg, out)
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	rec := testkit.Record(t, mem, sjLeft, `[{"lk": 1, "lv": "a"}]`)
	defer rec.Release()
	c := &testkit.Collector{T: t}
	if err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, c); err != nil {
		t.Fatal(err)
	}
	if _, err := op.(exec.Checkpointed).SnapshotState(ctx, 0); err == nil {
		t.Fatal("a final snapshot before the inputs ended")
	}
	for input := range 2 {
		if err := op.ProcessSignal(ctx, input, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	again := opTestNew(t, "stream_join", cfg, out)
	if err := again.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	defer again.Close(ctx)
	if err := again.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
		t.Fatal(err)
	}
}

// TestStreamJoinDiskCachedKeyCheckpoint: a batch whose join keys are all in
// the cache already still changes them, and the next checkpoint must carry
// the change. Left rows "a" then (after a checkpoint) "b" on key 1; a join
// restored from the second checkpoint pairs a right row of key 1 with both.
// (Before the fix, the second batch skipped the marking of its keys and the
// restored join knew only "a": TestStreamJoinRestart's rare disk failure.)
func TestStreamJoinDiskCachedKeyCheckpoint(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	cfg := sjConfig("inner", false)
	cfg.StateBackend = StateDisk
	out := append(append(types.Schema{}, sjLeft...), sjRight...)
	files := stateTestFiles(t)
	open := func() exec.Operator {
		t.Helper()
		tc := testkit.TaskContext(mem)
		tc.StateFiles, tc.SpillDir = files, t.TempDir()
		op := opTestNew(t, "stream_join", cfg, out)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op
	}
	feed := func(op exec.Operator, s int, schema types.Schema, rows string) []string {
		t.Helper()
		rec := testkit.Record(t, mem, schema, rows)
		defer rec.Release()
		c := &testkit.Collector{T: t}
		if err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec}, c); err != nil {
			t.Fatal(err)
		}
		return c.Rows
	}
	op := open()
	feed(op, 0, sjLeft, `[{"lk": 1, "lv": "a"}]`)
	if _, err := op.(exec.Checkpointed).SnapshotState(ctx, 1); err != nil {
		t.Fatal(err)
	}
	feed(op, 0, sjLeft, `[{"lk": 1, "lv": "b"}]`)
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	op.Close(ctx)
	again := open()
	defer again.Close(ctx)
	if err := again.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
		t.Fatal(err)
	}
	got := feed(again, 1, sjRight, `[{"rk": 1, "rv": "x"}]`)
	if len(got) != 2 {
		t.Fatalf("the restored join paired the right row with %d left rows, want 2 (a and b): %v", len(got), got)
	}
}

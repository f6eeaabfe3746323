package operators

// diskRun: what the tests of operators on the disk state backend share. Each
// runs one operator over more state than its --state-memory holds, restarts
// it from its checkpoints as a task restarted from one would be, and checks
// the DB grew past the memory bound.

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/types"
)

// diskOp is an operator a diskRun drives.
type diskOp interface {
	exec.Operator
	exec.Checkpointed
}

// diskRun is an operator of kind built from cfg, opened in a task whose
// state goes to a checkpoint store in a temporary directory, with
// StateMemory bytes of state memory and a spill directory of its own. Op is
// the operator running now, C what it emitted in all its runs; Close closes
// the operator (before the test checks its allocator).
type diskRun[T diskOp] struct {
	t   *testing.T
	ctx context.Context
	mem memory.Allocator
	// TC is the task's context, for a test to add to before the first
	// Open (newDiskRun's set) or to read.
	TC *exec.TaskContext
	Op T
	C  *testkit.Collector
	// Held is the most bytes (keys and values) the DB held at a checkpoint
	// (Restart).
	Held int64

	kind       string
	cfg        any
	out        types.Schema
	db         func(T) *disk.DB
	checkpoint int64
}

// newDiskRun opens the operator; db returns its DB, for Held (nil: an
// operator that may be on the memory backend, Held not kept).
func newDiskRun[T diskOp](t *testing.T, mem memory.Allocator, stateMemory int64, kind string, cfg any, out types.Schema, db func(T) *disk.DB) *diskRun[T] {
	t.Helper()
	r := &diskRun[T]{t: t, ctx: context.Background(), mem: mem, C: &testkit.Collector{T: t}, kind: kind, cfg: cfg, out: out, db: db}
	r.TC = testkit.TaskContext(mem)
	r.TC.Metrics = &exec.TaskMetrics{}
	r.TC.StateFiles, r.TC.StateMemory, r.TC.SpillDir = stateTestFiles(t), stateMemory, t.TempDir()
	r.Op = r.open()
	return r
}

// Close closes the operator running now.
func (r *diskRun[T]) Close() { r.Op.Close(r.ctx) }

func (r *diskRun[T]) open() T {
	r.t.Helper()
	op := opTestNew(r.t, r.kind, r.cfg, r.out).(T)
	if err := op.Open(r.ctx, r.TC); err != nil {
		r.t.Fatal(err)
	}
	return op
}

// Must fails the test on an error.
func (r *diskRun[T]) Must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// Feed sends input a batch of rows, JSON objects of schema s.
func (r *diskRun[T]) Feed(input int, s types.Schema, rows []string) {
	r.t.Helper()
	r.feed(input, s, rows, nil)
}

// FeedChanges sends input a batch of rows, JSON objects of schema s, of
// change kinds ops, and returns the rows it emitted for them (valid until
// the next call).
func (r *diskRun[T]) FeedChanges(input int, s types.Schema, rows []string, ops []exec.ChangeKind) []string {
	r.t.Helper()
	r.C.Rows = r.C.Rows[:0]
	r.feed(input, s, rows, ops)
	return r.C.Rows
}

func (r *diskRun[T]) feed(input int, s types.Schema, rows []string, ops []exec.ChangeKind) {
	r.t.Helper()
	rec := testkit.Record(r.t, r.mem, s, "["+strings.Join(rows, ",")+"]")
	err := r.Op.ProcessBatch(r.ctx, input, exec.Batch{Rec: rec, Ops: ops}, r.C)
	rec.Release()
	r.Must(err)
}

// Signal sends input a signal.
func (r *diskRun[T]) Signal(input int, s exec.Signal) {
	r.t.Helper()
	r.Must(r.Op.ProcessSignal(r.ctx, input, s, r.C))
}

// Watermark sends each of inputs the watermark wm.
func (r *diskRun[T]) Watermark(inputs int, wm int64) {
	r.t.Helper()
	for s := range inputs {
		r.Signal(s, exec.Signal{Kind: exec.Watermark, Watermark: wm})
	}
}

// End ends each of inputs.
func (r *diskRun[T]) End(inputs int) {
	r.t.Helper()
	for s := range inputs {
		r.Signal(s, exec.Signal{Kind: exec.EndOfStream})
	}
}

// Restart takes the next checkpoint, notes the DB's size in Held, lets
// counted read the operator's counters, closes it and opens a new one
// restored from the checkpoint.
func (r *diskRun[T]) Restart(counted func(T)) {
	r.t.Helper()
	r.checkpoint++
	data, err := r.Op.SnapshotState(r.ctx, r.checkpoint)
	r.Must(err)
	if r.db != nil {
		r.Held = max(r.Held, r.DBBytes())
	}
	if counted != nil {
		counted(r.Op)
	}
	r.Op.Close(r.ctx)
	r.Op = r.open()
	r.Must(r.Op.RestoreState(r.ctx, data))
}

// DBBytes is the bytes of the keys and values the operator's DB holds now.
func (r *diskRun[T]) DBBytes() int64 {
	r.t.Helper()
	var n int64
	r.Must(r.db(r.Op).Scan(nil, nil, func(k, v []byte) error { n += int64(len(k) + len(v)); return nil }))
	return n
}

// DBKeys is the number of keys the operator's DB holds now.
func (r *diskRun[T]) DBKeys() int {
	r.t.Helper()
	n := 0
	r.Must(r.db(r.Op).Scan(nil, nil, func(_, _ []byte) error { n++; return nil }))
	return n
}

// CheckHeld fails the test unless the DB held at least four times the
// state memory at a checkpoint: a test that does not outgrow the memory
// does not test the disk.
func (r *diskRun[T]) CheckHeld() {
	r.t.Helper()
	if r.Held < 4*r.TC.StateMemory {
		r.t.Fatalf("the DB held at most %d bytes, not four times the %d of --state-memory", r.Held, r.TC.StateMemory)
	}
}

// CheckRows fails the test unless the rows out are want, each as many times
// as it says.
func (r *diskRun[T]) CheckRows(want map[string]int) {
	r.t.Helper()
	got := map[string]int{}
	for _, row := range r.C.Rows {
		got[row]++
	}
	if len(got) != len(want) {
		r.t.Fatalf("%d distinct rows out, want %d", len(got), len(want))
	}
	for row, n := range want {
		if got[row] != n {
			r.t.Fatalf("row %s %d times, want %d", row, got[row], n)
		}
	}
}

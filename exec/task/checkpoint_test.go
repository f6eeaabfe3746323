package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
)

// uploadingOp counts the rows it sees; its state is that count, whose
// snapshot (exec.AsyncCheckpointed) finishes only once the checkpoint's gate
// is closed, with the checkpoint's error from fails, as an upload to a
// checkpoint store would.
type uploadingOp struct {
	rows  atomic.Int64
	gates map[int64]chan struct{}
	fails map[int64]error
}

var _ exec.AsyncCheckpointed = (*uploadingOp)(nil)

func (o *uploadingOp) Open(context.Context, *exec.TaskContext) error { return nil }
func (o *uploadingOp) ProcessBatch(_ context.Context, _ int, b exec.Batch, _ exec.Collector) error {
	o.rows.Add(int64(b.NumRows()))
	return nil
}
func (o *uploadingOp) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}
func (o *uploadingOp) Close(context.Context) error { return nil }
func (o *uploadingOp) SnapshotState(context.Context, int64) ([]byte, error) {
	return fmt.Appendf(nil, "%d", o.rows.Load()), nil
}
func (o *uploadingOp) RestoreState(context.Context, []byte) error { return nil }
func (o *uploadingOp) SnapshotStateAsync(ctx context.Context, id int64) (exec.PendingState, error) {
	blob := fmt.Appendf(nil, "%d", o.rows.Load()) // as of the barrier
	return func(ctx context.Context) ([]byte, int64, error) {
		if g := o.gates[id]; g != nil {
			<-g
		}
		if err := o.fails[id]; err != nil {
			return nil, 0, err
		}
		return blob, 100, nil
	}, nil
}

// waitFor waits until cond holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCheckpointUploadOffTaskThread runs a task whose operator's snapshot
// finishes in the background (the disk state backend's upload): the task
// processes batches after a barrier while that checkpoint's upload is held,
// acknowledges it once the upload is done, with the state as of the
// barrier; an upload that fails declines its checkpoint only, and the task
// goes on to the next.
func TestCheckpointUploadOffTaskThread(t *testing.T) {
	ctx := context.Background()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tc := &exec.TaskContext{JobID: "job", TaskName: "t[0/1]", Parallelism: 1, Alloc: mem,
		Log: slog.New(slog.DiscardHandler), Metrics: &exec.TaskMetrics{}}
	op := &uploadingOp{gates: map[int64]chan struct{}{1: make(chan struct{})}, fails: map[int64]error{2: errors.New("the store refused")}}
	tk := New(tc, nil, []exec.Operator{op}, []int{1})
	acks := make(chan exec.CheckpointAck, 8)
	id := exec.TaskID{Vertex: 1}
	tk.EnableCheckpoints(store, &exec.ExecutionGraph{JobID: "job"}, id, func(a exec.CheckpointAck) { acks <- a })
	done := make(chan error, 1)
	go func() { done <- tk.Run(ctx) }()
	schema := types.Schema{{Name: "x", Type: types.Int64Type}}
	batch := func(rows string) exec.Message {
		return exec.Message{Batch: exec.Batch{Rec: testkit.Record(t, mem, schema, rows)}}
	}
	barrier := func(id int64) exec.Message {
		return exec.Message{Signal: exec.Signal{Kind: exec.Barrier, Checkpoint: id}}
	}
	ack := func() exec.CheckpointAck {
		t.Helper()
		select {
		case a := <-acks:
			return a
		case <-time.After(10 * time.Second):
			t.Fatal("no acknowledgement")
		}
		return exec.CheckpointAck{}
	}
	stored := func(cp int64) string {
		t.Helper()
		data, err := store.Get(ctx, "job", cp, state.TaskKey(id))
		if err != nil {
			t.Fatal(err)
		}
		st, err := state.UnmarshalTaskSnapshot(data)
		if err != nil {
			t.Fatal(err)
		}
		return string(st.Ops[0])
	}

	tk.Inbox() <- batch(`[{"x": 1}, {"x": 2}, {"x": 3}]`)
	tk.Inbox() <- barrier(1)
	tk.Inbox() <- batch(`[{"x": 4}, {"x": 5}]`)
	// The task went on past the barrier while checkpoint 1's upload waits.
	waitFor(t, "the batch after the barrier is processed", func() bool { return op.rows.Load() == 5 })
	select {
	case a := <-acks:
		t.Fatalf("checkpoint acknowledged while its upload is held: %+v", a)
	default:
	}
	close(op.gates[1])
	if a := ack(); a.Checkpoint != 1 || a.Err != "" || a.Bytes <= 100 {
		t.Fatalf("checkpoint 1: %+v, want it stored, its uploaded bytes counted", a)
	}
	if got := stored(1); got != "3" {
		t.Fatalf("checkpoint 1 stored state %q, want the 3 rows before its barrier", got)
	}

	tk.Inbox() <- barrier(2)
	if a := ack(); a.Checkpoint != 2 || !strings.Contains(a.Err, "the store refused") {
		t.Fatalf("checkpoint 2, whose upload fails: %+v, want it declined", a)
	}
	tk.Inbox() <- batch(`[{"x": 6}]`)
	tk.Inbox() <- barrier(3)
	if a := ack(); a.Checkpoint != 3 || a.Err != "" {
		t.Fatalf("checkpoint 3 after a failed one: %+v", a)
	}
	if got := stored(3); got != "6" {
		t.Fatalf("checkpoint 3 stored state %q, want 6", got)
	}
	tk.Inbox() <- exec.Message{Signal: exec.Signal{Kind: exec.EndOfStream}}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task did not end")
	}
	if a := ack(); !a.Finished {
		t.Fatalf("last acknowledgement %+v, want the task finished", a)
	}
}

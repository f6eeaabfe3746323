package exec

import (
	"context"
	"time"
)

// Checkpoints, as in the paper (and Flink): the JobManager's coordinator asks the
// source tasks to inject a barrier for checkpoint n; it flows with the batches;
// a task with several input channels aligns it (holds back the channels that
// delivered it until all have); when it has passed a task's chain, the task
// snapshots the state of every Checkpointed operator (and its source) and
// acknowledges; once every task has, the checkpoint is complete and every
// CheckpointListener hears so (a source commits its offsets to its consumer
// group, a transactional sink commits the records of that checkpoint). A job
// that fails restarts every task from the last complete checkpoint: RestoreState
// with what SnapshotState returned, sources rewinding to their positions.

// Checkpointed is a source, operator or sink with state to checkpoint.
//
// A source's SnapshotState is called with TaskContext.CheckpointLock held; the
// source holds that lock while it advances the position it reports and emits
// the batch the advance covers, so a snapshot covers exactly the batches emitted
// (Flink's checkpoint lock). SnapshotState may run on another goroutine than Run. For an operator or sink it is called on the task's goroutine right
// after the barrier passed it (an operator gets the Barrier signal first, in
// ProcessSignal, and should flush what it holds back, such as an aggregation's
// pending updates, before forwarding it).
type Checkpointed interface {
	// SnapshotState returns the state as of checkpoint's barrier, in the
	// operator's own encoding. It must not keep references to the returned bytes.
	SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error)
	// RestoreState is called after Open and before any input with what
	// SnapshotState returned for the checkpoint the job restarts from.
	RestoreState(ctx context.Context, data []byte) error
}

// StateFiles is where an operator whose state lives in files (the disk state
// backend, exec/state/disk) keeps them for checkpoints: files shared by the
// checkpoints of one task, uploaded once and referred to by every checkpoint
// that needs them, so that a checkpoint uploads only the files new since the
// last one. The TaskManager gives each task its own (TaskContext.StateFiles);
// names are the task's own.
type StateFiles interface {
	// Upload copies the local file path to the store as name.
	Upload(ctx context.Context, name, path string) error
	// Download copies name from the store to the local file path; an error
	// wrapping fs.ErrNotExist when the store lacks it.
	Download(ctx context.Context, name, path string) error
	// Refer records that the task's state in checkpoint needs the files
	// names: pruning keeps a file while a kept checkpoint refers to it. owner
	// tells apart the several operators of a task that keep files.
	Refer(ctx context.Context, checkpoint int64, owner string, names []string) error
}

// AsyncCheckpointed is a Checkpointed operator whose snapshot has a slow part
// that need not hold up its task: uploading the files of the disk state
// backend. For a checkpoint the task calls SnapshotStateAsync instead of
// SnapshotState, on its goroutine right after the barrier passed (the state
// a task ends with is still SnapshotState's): it takes the state as of the
// barrier and returns the rest of the work, which the task runs on another
// goroutine while it goes on processing; it acknowledges the checkpoint once
// that returned. An error from either fails the checkpoint, not the job.
type AsyncCheckpointed interface {
	SnapshotStateAsync(ctx context.Context, checkpoint int64) (PendingState, error)
}

// PendingState finishes a snapshot (AsyncCheckpointed) off the task's
// goroutine: it returns the operator's state blob, and the bytes it uploaded
// besides, which the checkpoint's size counts. It must not touch what the
// task's goroutine uses, and is called exactly once.
type PendingState func(ctx context.Context) (blob []byte, uploaded int64, err error)

// EndStateUnread is a Checkpointed operator whose state once its inputs have
// ended nobody reads: it has emitted all it would, and a task restored from
// a checkpoint that lists it as ended runs without its operators (only a
// view's rows and a source's position matter then). The state a task stores
// as it ends, for the checkpoints after it, leaves such operators' out: for
// a join or a Top-N holding every row, writing it would cost more than the
// whole job did (stream_join, topn, over_window). Sinks, which may commit
// what a restored state holds, and views are not such operators.
type EndStateUnread interface {
	EndStateUnread()
}

// CheckpointListener hears that a checkpoint is complete: every task of the job
// has stored its state for it. A source commits the offsets of that checkpoint
// to its consumer group; a transactional sink commits the transaction holding
// the records it took before that checkpoint's barrier. For a source it may run
// concurrently with Run; for an operator it runs on the task's goroutine.
type CheckpointListener interface {
	NotifyCheckpointComplete(ctx context.Context, checkpoint int64) error
}

// CheckpointAck is a task's answer to a checkpoint's barrier: its state is
// stored (Err empty) or could not be.
type CheckpointAck struct {
	Task       TaskID        `json:"task"`
	Checkpoint int64         `json:"checkpoint"`
	Bytes      int           `json:"bytes"`
	Align      time.Duration `json:"align"` // from the first barrier to the last, for a task with several channels
	Err        string        `json:"err,omitempty"`
	// Finished says the task ended (its input did): it takes part in no
	// further checkpoint, and a checkpoint completes without it.
	Finished bool `json:"finished,omitempty"`
}

// Package exec is Hummer's dataflow runtime: the contracts every operator, source
// and sink implements, the JobGraph and ExecutionGraph a job is described by, the
// StreamTask that runs a fused chain of operators in a slot, the queues and
// exchanges between tasks, and the JobManager and TaskManager of the paper.
//
// This file holds only the core contracts.
package exec

import (
	"context"
	"log/slog"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ChangeKind says what a row does to the result it flows into.
type ChangeKind int8

const (
	// Insert adds the row.
	Insert ChangeKind = iota
	// Delete removes one earlier-inserted equal row.
	Delete
	// UpdateBefore is the old version of an updated row (a Delete paired with the
	// UpdateAfter that follows it).
	UpdateBefore
	// UpdateAfter is the new version of an updated row.
	UpdateAfter
)

func (k ChangeKind) String() string {
	switch k {
	case Insert:
		return "insert"
	case Delete:
		return "delete"
	case UpdateBefore:
		return "update_before"
	case UpdateAfter:
		return "update_after"
	}
	return "?"
}

// How a network edge's sending side runs (JobGraph.NetworkTasks; see
// PlaceNetworkTasks): fused into the producing task, in a network task of its
// own, or, the default, chosen per edge by the slots there are.
const (
	NetworkFused = "fused"
	NetworkOwn   = "own"
	NetworkAuto  = "auto"
)

// Batch is the unit of data on every edge: an Arrow record batch plus the change
// kind of each row. The change kinds are kept beside the record rather than as a
// column so that operators that do not care (most of them) see the user's columns
// only, and an all-insert batch, the common case, carries nothing extra.
type Batch struct {
	Rec arrow.RecordBatch
	// Ops has one entry per row, or is nil when every row is an Insert.
	Ops []ChangeKind
}

// NumRows returns the number of rows in b.
func (b Batch) NumRows() int {
	if b.Rec == nil {
		return 0
	}
	return int(b.Rec.NumRows())
}

// Op returns the change kind of row i.
func (b Batch) Op(i int) ChangeKind {
	if b.Ops == nil {
		return Insert
	}
	return b.Ops[i]
}

// SignalKind names the control messages that flow in band with the data.
type SignalKind uint8

const (
	// Watermark says no row with an event time below Signal.Watermark will follow.
	Watermark SignalKind = iota + 1
	// Barrier marks the cut of checkpoint Signal.Checkpoint in the stream.
	Barrier
	// EndOfStream says the input is finished; a bounded source ends with it.
	EndOfStream
)

func (k SignalKind) String() string {
	switch k {
	case Watermark:
		return "watermark"
	case Barrier:
		return "barrier"
	case EndOfStream:
		return "end-of-stream"
	}
	return "?"
}

// Signal is a watermark, checkpoint barrier or end of stream.
type Signal struct {
	Kind       SignalKind
	Watermark  int64 // event time in microseconds since the epoch, for Watermark
	Checkpoint int64 // checkpoint id, for Barrier
}

// Message is what a queue between two tasks carries: exactly one of a data batch
// or a signal, stamped with the input of the receiving task it is for and the
// channel (the sending subtask) it came from, so that a task can count
// end-of-stream per channel and, later, align barriers.
type Message struct {
	Input   int
	Channel int
	Batch   Batch
	Signal  Signal // Kind 0 when the message is data
}

// IsData reports whether m carries a batch.
func (m Message) IsData() bool { return m.Signal.Kind == 0 }

// Collector receives what an operator emits. Inside a fused chain it calls the next
// operator directly; at the end of a chain it writes to the task's output edges.
// A batch passed to Collect is borrowed for the call: a receiver that keeps it
// must Retain it.
type Collector interface {
	Collect(ctx context.Context, b Batch) error
	CollectSignal(ctx context.Context, s Signal) error
}

// TaskContext is what a running task gives its operators.
type TaskContext struct {
	JobID       string
	TaskName    string // "vertex-name[subtask/parallelism]", for logs
	Subtask     int    // 0-based index of this parallel instance
	Parallelism int    // number of parallel instances of this vertex
	Alloc       memory.Allocator
	Log         *slog.Logger
	// Results receives the rows of a query answered to a client (the "result" sink).
	Results ResultSink
	// Metrics counts rows and errors of this task; shared with the JobManager.
	Metrics *TaskMetrics
	// Checkpointing says the job takes checkpoints (checkpoint.go): a source
	// then commits its progress only when a checkpoint completes, and a sink
	// writes each checkpoint's records in one transaction it commits then.
	Checkpointing bool
	// CheckpointLock, set when the job takes checkpoints, is held by the task
	// while it snapshots the source and injects a barrier. A source that is
	// Checkpointed must hold it while it advances its position and emits the
	// batch that position covers, so that no snapshot falls between the two;
	// the task takes it around the batches of any other source.
	CheckpointLock *sync.Mutex
	// Colocated is shared by the subtasks of this task's vertex that run in
	// this TaskManager, in this run of the job; nil when a test builds a
	// TaskContext alone.
	Colocated *Colocated
}

// Colocated holds one value for the subtasks of a vertex that run in one
// TaskManager: a file source's queue of byte ranges, through which the subtask
// on the less busy core reads more of the file. Subtasks in other TaskManagers
// have their own.
type Colocated struct {
	mu sync.Mutex
	v  any
}

// Value returns the shared value, which the first caller makes with newValue.
func (c *Colocated) Value(newValue func() any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v == nil {
		c.v = newValue()
	}
	return c.v
}

// Operator processes batches pushed by its task. Batches are borrowed for the call;
// an operator that keeps one must Retain it. An operator is used by one goroutine
// at a time and never needs locks of its own.
type Operator interface {
	Open(ctx context.Context, tc *TaskContext) error
	// ProcessBatch handles one batch that arrived on the given input (0, or 1 for
	// the right side of a two-input operator).
	ProcessBatch(ctx context.Context, input int, b Batch, out Collector) error
	// ProcessSignal handles a watermark, barrier or end of stream. The task calls it
	// once per signal after aligning its inputs: EndOfStream on input i comes once,
	// when every channel of that input has ended. An operator forwards what it does
	// not consume.
	ProcessSignal(ctx context.Context, input int, s Signal, out Collector) error
	// Close releases resources. It is safe to call twice, and after a failed Open.
	Close(ctx context.Context) error
}

// Flusher is an operator that holds output back to emit it in bulk, such as a
// streaming aggregation's updates. Its task calls Flush after a source's batch,
// and in other tasks when the inbox is empty or a flush interval has passed, so
// output lags input by at most about that interval.
type Flusher interface {
	Flush(ctx context.Context, out Collector) error
}

// Source produces the batches of a source task. A bounded source returns nil from
// Run when it has produced everything; the task then sends EndOfStream. An
// unbounded source runs until ctx is cancelled.
type Source interface {
	// Open prepares to read this subtask's share of the input
	// (tc.Subtask of tc.Parallelism).
	Open(ctx context.Context, tc *TaskContext) error
	Run(ctx context.Context, out Collector) error
	// Close is safe to call twice, and after a failed Open.
	Close() error
}

// ResultSink takes the rows a job answers to a waiting client.
type ResultSink interface {
	// Send delivers one batch of job jobID's result. The batch is borrowed.
	Send(ctx context.Context, jobID string, b Batch) error
}

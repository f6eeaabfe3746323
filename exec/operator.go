// Package exec holds the contracts every part of Hummer's dataflow runtime
// shares, and nothing else: the Batch and Signal on every edge and the Message
// a queue carries (batch.go); the Operator, Source, Collector and TaskContext a
// task runs with (this file); the JobGraph a client plans (jobgraph.go) and the
// ExecutionGraph the JobManager expands it to (executiongraph.go); the
// Deployment through which the JobManager holds a job's tasks on one
// TaskManager; the checkpoint interfaces; task metrics; and the Registry a
// TaskManager builds a JobGraph's operators and connectors through.
//
// The parts of the paper's runtime are the packages below it, each importing
// only packages listed before it (layout_test.go holds that):
//
//	types        the SQL types and their Arrow form
//	expr         expressions over Arrow batches
//	checkpoint   the checkpoint store (gocloud.dev blob)
//	exec         these contracts (imports only types)
//	vector       column-buffer kernels: gathering rows, building records, hashing, pooled memory
//	state        operator state: keyed state (row keys, key tables) and the snapshot envelope
//	operators    the built-in operators: filter, project, unnest, hash aggregation, hash join, stream join, sort, limit, Top-N, values, views, results
//	network      network channels (Arrow IPC over TCP) and network tasks
//	task         the StreamTask: its fused chain, inbox, exchanges, barrier alignment and checkpoints
//	taskmanager  the TaskManager: slots, and deploying a job's tasks wired by queues and channels
//	jobmanager   the JobManager: parallelism, placement, the checkpoint coordinator, restarts
//	control      the control plane between a JobManager and TaskManagers in other processes
//
// operators and network do not import each other; nor do task and operators,
// nor jobmanager and taskmanager: the TaskManager builds operators through the
// Registry, and the JobManager sees TaskManagers as Workers.
package exec

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

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
	// WorkMem is how much memory an operator of the task may hold for its
	// state before it spills to disk (its config may say otherwise, SET
	// work_mem); 0 means no bound. SpillDir is where it spills ("" for the
	// system's temporary directory).
	WorkMem  int64
	SpillDir string
	// StateBackend is the TaskManager's default state backend, "memory" or
	// "disk" (an operator's config may say otherwise, SET state_backend);
	// "" is memory. StateMemory bounds, with the disk backend, the memory
	// each stateful operator of the task keeps its state in (exec/state/disk);
	// 0 means its default. StateFiles, set when the job takes checkpoints, is
	// where the disk backend's checkpoints keep their files.
	StateBackend string
	StateMemory  int64
	StateFiles   StateFiles
	// StateLimit bounds the state an operator keeps on the memory backend
	// (a slot's share of the process's memory limit): past it, an operator
	// that checks it fails its job with ErrOutOfMemory naming
	// state_backend = 'disk', before the process runs out of memory. 0
	// means none.
	StateLimit int64
	// Late, when the task's vertex has a late edge (JobEdge.Late), takes the
	// rows its LateEmitter operator finds late, in that operator's late
	// schema; nil otherwise, and the late rows are only counted. Only
	// Collect is for operators: the task sends the signals.
	Late Collector
	// Colocated is shared by the subtasks of this task's vertex that run in
	// this TaskManager, in this run of the job; nil when a test builds a
	// TaskContext alone.
	Colocated *Colocated
	// NoTaskMetrics turns off the task's accounting of where its time goes
	// and of what each operator of its chain does (TaskMetrics' BusyNanos,
	// IdleNanos, BackpressureNanos, ChainRowsOut, ChainNanos), leaving a branch per
	// batch on the hot path (--task-metrics=false, SET task_metrics = off).
	// The counts SHOW PROCESSLIST and progress show (rows and batches in and
	// out, bytes read and sent, late and bad rows) are kept: they are one
	// atomic add per batch each, and a job without them could not be watched.
	NoTaskMetrics bool
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

// Ticker is an operator that acts on processing time as well as on its input,
// such as one that says processing time has passed (a watermark of the wall
// clock) while no rows arrive. Its task calls Tick about every TickInterval,
// between batches and signals (in a source task, under the lock its batches
// are emitted under), until its inputs end.
type Ticker interface {
	Tick(ctx context.Context, now time.Time, out Collector) error
}

// PerInputWatermarks is an operator of two inputs that takes each input's
// watermark apart (the least over that input's channels, on that input)
// rather than the least over every channel on input 0, as its task gives
// other operators: an interval join, which frees one side's rows by the
// other side's watermark. It forwards the watermark it derives itself.
type PerInputWatermarks interface {
	PerInputWatermarks() bool
}

// LateEmitter is an operator that sends the rows it finds late (behind the
// watermark) to its task's TaskContext.Late, when set, besides counting them.
// It finds rows late only in ProcessBatch. Its task sends each barrier and
// the end of stream to the late edges once the last LateEmitter of its chain
// has passed it on, so the late rows before a barrier are in its checkpoint.
type LateEmitter interface {
	EmitsLate() bool
}

// TickInterval is how often a task ticks its Tickers: how late a window of
// processing time closes, at most, after its end.
const TickInterval = 200 * time.Millisecond

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

// ViewReader is an operator that keeps the current rows of a materialised view
// (the "view" sink of its job), for the queries over the view to read while the
// job runs and after it ended (Deployment.ReadView).
type ViewReader interface {
	// ReadView returns the rows as an Arrow IPC stream. Until the view has
	// caught up with its inputs (its job's bounded inputs ended, or the first
	// checkpoint's barrier reached it) it returns ErrViewNotReady instead,
	// unless now is set.
	ReadView(now bool) ([]byte, error)
}

package exec

import (
	"maps"
	"sync"
	"sync/atomic"
)

// TaskMetrics counts what one task did. Fields are updated atomically by the task
// and read by the JobManager at any time.
type TaskMetrics struct {
	RowsIn     atomic.Int64
	RowsOut    atomic.Int64
	BatchesIn  atomic.Int64
	BatchesOut atomic.Int64
	// LateRows counts the rows a window aggregation dropped because their
	// window had closed: the watermark had passed it.
	LateRows atomic.Int64
	// Watermark is the watermark a watermark operator of the task last
	// emitted (microseconds since the epoch), 0 before the first; negative
	// while it is idle, holding none back.
	Watermark atomic.Int64
	// BadRecords counts malformed input records a source skipped.
	BadRecords atomic.Int64
	// NetBytesOut counts the bytes the task sent over network channels.
	NetBytesOut atomic.Int64
	// SinkRows counts the rows the task's sink wrote (INSERT INTO ... jobs).
	SinkRows atomic.Int64
	// DeadLetters counts malformed input records a source routed to its
	// dead-letter destination instead of skipping them.
	DeadLetters atomic.Int64
	// BusyNanos, IdleNanos and BackpressureNanos split the task's time as
	// Flink does: working on its input, waiting on an empty inbox, and
	// blocked on a full queue of a task downstream. The task adds to them as
	// it goes (per batch, never per row); a source's reading counts as busy,
	// but the time it says it waited for input (a throttled generator) as idle.
	BusyNanos         atomic.Int64
	IdleNanos         atomic.Int64
	BackpressureNanos atomic.Int64
	// queue is the task's inbox (nil for a source), for QueueFill; remote
	// holds its fill as the last heartbeat told, for a task elsewhere.
	queue  atomic.Pointer[chan Message]
	remote atomic.Pointer[[2]int]
	// SourceBytes counts the bytes a file source read of the SourceTotal its
	// subtask was given (reading past its range's end to finish a line may
	// take it a little over): a bounded query's progress.
	SourceBytes atomic.Int64
	SourceTotal atomic.Int64
	// chain counts, per operator of the task's fused chain (its source
	// first), the rows it emitted to the next (ChainRowsOut); chainRemote
	// holds them as the last heartbeat told, for a task elsewhere.
	chain       atomic.Pointer[[]atomic.Int64]
	chainRemote atomic.Pointer[[]int64]
	// chainTime is, per operator of the chain, the nanoseconds spent in it
	// and not in the operators it calls (ChainNanos); chainTimeRemote as the
	// last heartbeat told.
	chainTime       atomic.Pointer[[]atomic.Int64]
	chainTimeRemote atomic.Pointer[[]int64]
	// lags are a source's consumer lag by partition (SetLag).
	lagMu sync.Mutex
	lags  map[int]int64
	// firstBad describes the first malformed record a source skipped.
	firstBad atomic.Pointer[string]
	// status says what the task is waiting for when it is not simply running,
	// such as a broker it is reconnecting to; empty when all is well.
	status atomic.Pointer[string]
}

// SetStatus records what the task is waiting for ("" when all is well again), for
// SHOW PROCESSLIST.
func (m *TaskMetrics) SetStatus(s string) { m.status.Store(&s) }

// Status returns what SetStatus last recorded.
func (m *TaskMetrics) Status() string {
	if s := m.status.Load(); s != nil {
		return *s
	}
	return ""
}

// NoteBadRecord counts a malformed input record the task skipped (BadRecords);
// the first one's description (where it was, what was wrong) is kept, for the
// client to be told (FirstBadRecord).
func (m *TaskMetrics) NoteBadRecord(what string) {
	m.BadRecords.Add(1)
	m.firstBad.CompareAndSwap(nil, &what)
}

// FirstBadRecord describes the first record NoteBadRecord counted, or "".
func (m *TaskMetrics) FirstBadRecord() string {
	if s := m.firstBad.Load(); s != nil {
		return *s
	}
	return ""
}

// SetQueue records the task's inbox, whose fill QueueFill reports.
func (m *TaskMetrics) SetQueue(q chan Message) { m.queue.Store(&q) }

// SetQueueFill records the fill of a task's inbox in another process, as its
// TaskManager reported it.
func (m *TaskMetrics) SetQueueFill(n, capacity int) { m.remote.Store(&[2]int{n, capacity}) }

// QueueFill returns the messages in the task's inbox and its capacity; 0, 0
// for a source, which has none.
func (m *TaskMetrics) QueueFill() (n, capacity int) {
	if q := m.queue.Load(); q != nil {
		return len(*q), cap(*q)
	}
	if r := m.remote.Load(); r != nil {
		return r[0], r[1]
	}
	return 0, 0
}

// SetLag records how many records partition p of the task's source holds past
// what the source fetched (a Kafka partition's high watermark less the next
// offset), as the source last saw it.
func (m *TaskMetrics) SetLag(p int, records int64) {
	m.lagMu.Lock()
	if m.lags == nil {
		m.lags = map[int]int64{}
	}
	m.lags[p] = records
	m.lagMu.Unlock()
}

// Lags returns the consumer lag SetLag recorded, by partition; nil when the
// task's source records none.
func (m *TaskMetrics) Lags() map[int]int64 {
	m.lagMu.Lock()
	defer m.lagMu.Unlock()
	return maps.Clone(m.lags)
}

// SetChainLength sizes the per-operator counters for a chain of n operators
// (its source included); the task calls it once, before it runs.
func (m *TaskMetrics) SetChainLength(n int) {
	c, ts := make([]atomic.Int64, n), make([]atomic.Int64, n)
	m.chain.Store(&c)
	m.chainTime.Store(&ts)
}

// OperatorNanos is the counter of the time operator i of the chain (its
// source first) spent on its own work, nil for i out of range (the task's own
// work: its inbox and output).
func (m *TaskMetrics) OperatorNanos(i int) *atomic.Int64 {
	c := m.chainTime.Load()
	if c == nil || i < 0 || i >= len(*c) {
		return nil
	}
	return &(*c)[i]
}

// SetChainNanos records the per-operator times of a task in another process,
// as its TaskManager reported them.
func (m *TaskMetrics) SetChainNanos(ns []int64) { m.chainTimeRemote.Store(&ns) }

// ChainNanos returns, per operator of the task's fused chain (its source
// first), the nanoseconds it spent in its own work: in its calls (a batch, a
// signal, a flush) less the time in the operators it passed its output to,
// and, for a source, less the time it said it waited for input. Time blocked
// on a full queue downstream is the task's output's, no operator's, so the
// times add up to at most BusyNanos. Nil before the task is built, or with
// TaskContext.NoTaskMetrics.
func (m *TaskMetrics) ChainNanos() []int64 {
	c := m.chainTime.Load()
	if c == nil || len(*c) == 0 {
		if r := m.chainTimeRemote.Load(); r != nil {
			return *r
		}
		return nil
	}
	out := make([]int64, len(*c))
	for i := range *c {
		out[i] = (*c)[i].Load()
	}
	return out
}

// ChainRows is the counter of the rows operator i of the chain emits to the
// next, nil for i out of range (the inbox, before the first).
func (m *TaskMetrics) ChainRows(i int) *atomic.Int64 {
	c := m.chain.Load()
	if c == nil || i < 0 || i >= len(*c)-1 {
		return nil // the last operator's rows are RowsOut
	}
	return &(*c)[i]
}

// SetChainRowsOut records the per-operator rows of a task in another process,
// as its TaskManager reported them.
func (m *TaskMetrics) SetChainRowsOut(rows []int64) { m.chainRemote.Store(&rows) }

// ChainRowsOut returns, per operator of the task's fused chain (its source
// first), the rows it emitted: to the next operator, and the last one's to the
// task's output (RowsOut). Nil before the task is built.
func (m *TaskMetrics) ChainRowsOut() []int64 {
	c := m.chain.Load()
	if c == nil || len(*c) == 0 {
		if r := m.chainRemote.Load(); r != nil {
			return *r
		}
		return nil
	}
	out := make([]int64, len(*c))
	for i := range *c {
		out[i] = (*c)[i].Load()
	}
	out[len(out)-1] = m.RowsOut.Load()
	return out
}

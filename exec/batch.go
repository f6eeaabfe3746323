package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
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
	// Idle says the channel has no rows for now (a source subtask without
	// partitions, or silent for its idle timeout): it holds no watermark back
	// until it sends a watermark again (Flink's idle watermark status).
	Idle
)

func (k SignalKind) String() string {
	switch k {
	case Watermark:
		return "watermark"
	case Barrier:
		return "barrier"
	case EndOfStream:
		return "end-of-stream"
	case Idle:
		return "idle"
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

// DrainInbox releases the batches queued in inbox (which may be nil).
func DrainInbox(inbox chan Message) {
	for {
		select {
		case m := <-inbox:
			if m.IsData() {
				m.Batch.Rec.Release()
			}
		default:
			return
		}
	}
}

// QueueCapacity is the number of messages a task's inbox holds before its
// producers block. Small, so backpressure reaches the sources quickly and the
// batches in flight stay in cache-sized numbers.
const QueueCapacity = 16

package exec

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// flushInterval bounds how long a task whose inbox never runs empty holds back
// the output of its Flusher operators.
const flushInterval = 100 * time.Millisecond

// streamTask runs one ExecTask: a source (for source vertices) or an inbox feeding
// the fused chain of operators, whose end writes to the task's output channels.
// Inside the chain operators call each other directly; only the inbox is a queue.
type streamTask struct {
	tc     *TaskContext
	source Source       // nil unless the vertex starts with a source
	chain  []Operator   // the operators after the source, in chain order
	inbox  chan Message // nil for sources
	// channels[i] is the number of channels feeding input i.
	channels []int
	out      *outputCollector
	// net are the task's network channels to other TaskManagers, and netTasks
	// the network tasks that feed them when they run on their own (NetworkOwn).
	net      []*lazySender
	netTasks []*netTask
}

// closeNet closes the task's network channels: after its end of stream went out
// this is their clean end; after a failure the receivers see the channel break.
func (t *streamTask) closeNet() {
	for _, s := range t.net {
		s.close()
	}
}

// chainLink feeds one operator of a fused chain: its Collect is the previous
// operator's output, and it passes the operator's own output to next.
type chainLink struct {
	op   Operator
	next Collector
}

func (l *chainLink) Collect(ctx context.Context, b Batch) error {
	return l.op.ProcessBatch(ctx, 0, b, l.next)
}

func (l *chainLink) CollectSignal(ctx context.Context, s Signal) error {
	return l.op.ProcessSignal(ctx, 0, s, l.next)
}

// collectors returns, for each operator of the chain, the Collector its output
// goes to.
func (t *streamTask) collectors() []Collector {
	cs := make([]Collector, len(t.chain))
	var next Collector = t.out
	for i := len(t.chain) - 1; i >= 0; i-- {
		cs[i] = next
		next = &chainLink{op: t.chain[i], next: next}
	}
	return cs
}

// run executes the task to completion. A panic in an operator becomes the task's
// error, with the stack in the log, so one bad operator fails its job and not the
// process.
func (t *streamTask) run(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			t.tc.Log.Error("task panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("task %s: internal error: %v", t.tc.TaskName, r)
		}
	}()
	defer t.close(context.WithoutCancel(ctx))
	if err := t.open(ctx); err != nil {
		return err
	}
	if t.source != nil {
		return t.runSource(ctx)
	}
	return t.runInbox(ctx)
}

func (t *streamTask) open(ctx context.Context) error {
	if t.source != nil {
		if err := t.source.Open(ctx, t.tc); err != nil {
			return err
		}
	}
	for _, op := range t.chain {
		if err := op.Open(ctx, t.tc); err != nil {
			return err
		}
	}
	return nil
}

func (t *streamTask) close(ctx context.Context) {
	if t.source != nil {
		if err := t.source.Close(); err != nil {
			t.tc.Log.Warn("closing source", "err", err)
		}
	}
	for _, op := range t.chain {
		if err := op.Close(ctx); err != nil {
			t.tc.Log.Warn("closing operator", "err", err)
		}
	}
}

func (t *streamTask) head() Collector {
	if len(t.chain) == 0 {
		return t.out
	}
	return &chainLink{op: t.chain[0], next: t.collectors()[0]}
}

// flushers returns the chain's Flusher operators, in chain order, each with the
// Collector its output goes to.
func (t *streamTask) flushers() []chainLink {
	var fs []chainLink
	cs := t.collectors()
	for i, op := range t.chain {
		if _, ok := op.(Flusher); ok {
			fs = append(fs, chainLink{op: op, next: cs[i]})
		}
	}
	return fs
}

// flush flushes fs in chain order, so what one emits reaches the next first.
func flush(ctx context.Context, fs []chainLink) error {
	for _, l := range fs {
		if err := l.op.(Flusher).Flush(ctx, l.next); err != nil {
			return err
		}
	}
	return nil
}

func (t *streamTask) runSource(ctx context.Context) error {
	var head Collector = &countingCollector{next: t.head(), metrics: t.tc.Metrics}
	if fs := t.flushers(); len(fs) > 0 {
		// A source's batch is its own mini-batch: what it read at once.
		head = &flushingCollector{Collector: head, flushers: fs}
	}
	if err := t.source.Run(ctx, head); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return head.CollectSignal(ctx, Signal{Kind: EndOfStream})
}

// runInbox processes messages until every channel of every input has ended.
//
// Watermarks are forwarded as the minimum over all channels. Barriers are passed on
// once every channel has delivered them, without blocking channels that delivered
// early (alignment, which exactly-once needs, comes with checkpointing).
func (t *streamTask) runInbox(ctx context.Context) error {
	op := t.chain[0]
	next := t.collectors()[0]
	fs := t.flushers()
	lastFlush := time.Now()
	ended := make([]int, len(t.channels))
	total := 0
	for _, n := range t.channels {
		total += n
	}
	var (
		endedAll   int
		watermarks = map[[2]int]int64{}
		emittedWM  = int64(-1 << 63)
		barriers   = map[int64]int{}
	)
	for endedAll < total {
		var m Message
		select {
		case m = <-t.inbox:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if m.IsData() {
			t.tc.Metrics.RowsIn.Add(int64(m.Batch.NumRows()))
			t.tc.Metrics.BatchesIn.Add(1)
			err := op.ProcessBatch(ctx, m.Input, m.Batch, next)
			m.Batch.Rec.Release()
			if err != nil {
				return err
			}
			if len(fs) > 0 && (len(t.inbox) == 0 || time.Since(lastFlush) >= flushInterval) {
				if err := flush(ctx, fs); err != nil {
					return err
				}
				lastFlush = time.Now()
			}
			continue
		}
		switch m.Signal.Kind {
		case EndOfStream:
			ended[m.Input]++
			endedAll++
			if ended[m.Input] == t.channels[m.Input] {
				if err := op.ProcessSignal(ctx, m.Input, m.Signal, next); err != nil {
					return err
				}
			}
		case Watermark:
			watermarks[[2]int{m.Input, m.Channel}] = m.Signal.Watermark
			if len(watermarks) < total {
				continue
			}
			low := m.Signal.Watermark
			for _, w := range watermarks {
				low = min(low, w)
			}
			if low > emittedWM {
				emittedWM = low
				if err := op.ProcessSignal(ctx, 0, Signal{Kind: Watermark, Watermark: low}, next); err != nil {
					return err
				}
			}
		case Barrier:
			barriers[m.Signal.Checkpoint]++
			if barriers[m.Signal.Checkpoint] == total {
				delete(barriers, m.Signal.Checkpoint)
				if err := op.ProcessSignal(ctx, 0, m.Signal, next); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// drain releases every batch still queued in the inbox of a task that stopped
// early, so a failed or cancelled job gives back all its memory.
func (t *streamTask) drain() {
	if t.inbox == nil {
		return
	}
	for {
		select {
		case m := <-t.inbox:
			if m.IsData() {
				m.Batch.Rec.Release()
			}
		default:
			return
		}
	}
}

// flushingCollector flushes the chain after every batch a source emits.
type flushingCollector struct {
	Collector
	flushers []chainLink
}

func (c *flushingCollector) Collect(ctx context.Context, b Batch) error {
	if err := c.Collector.Collect(ctx, b); err != nil {
		return err
	}
	return flush(ctx, c.flushers)
}

// countingCollector counts what a source emits before passing it on.
type countingCollector struct {
	next    Collector
	metrics *TaskMetrics
}

func (c *countingCollector) Collect(ctx context.Context, b Batch) error {
	c.metrics.RowsIn.Add(int64(b.NumRows()))
	c.metrics.BatchesIn.Add(1)
	return c.next.Collect(ctx, b)
}

func (c *countingCollector) CollectSignal(ctx context.Context, s Signal) error {
	return c.next.CollectSignal(ctx, s)
}

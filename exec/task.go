package exec

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// A task flushes its Flusher operators (a streaming aggregation's updates) when
// its inbox runs empty, but not more often than every minFlushInterval, so that
// a busy stream's groups change a few times a second rather than at every
// batch, and at least every flushInterval when the inbox never runs empty.
const (
	minFlushInterval = 50 * time.Millisecond
	flushInterval    = 100 * time.Millisecond
)

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
	// ckpt is the task's part in checkpointing; nil when the job takes none.
	ckpt *taskCheckpoints
	// view is the rows of the task's view operator, if it ends with one.
	view *ViewState
	// ended says the checkpoint the task restored from lists it as ended: it
	// ran to its end in an earlier attempt, and everything it emitted is in
	// the state of the tasks after it (runEnded).
	ended bool
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
	if err := t.restoreState(ctx); err != nil {
		return err
	}
	switch {
	case t.ended:
		err = t.runEnded(ctx)
	case t.source != nil:
		err = t.runSource(ctx)
	default:
		err = t.runInbox(ctx)
	}
	if err == nil && t.ckpt != nil {
		if !t.ended {
			err = t.storeFinal(ctx)
		}
		if err == nil {
			t.ckpt.acks(CheckpointAck{Task: t.ckpt.task, Finished: true})
		}
	}
	return err
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
	if t.ckpt != nil {
		t.ckpt.puts.Wait()
	}
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
	if t.ckpt == nil {
		if err := t.source.Run(ctx, head); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		return head.CollectSignal(ctx, Signal{Kind: EndOfStream})
	}
	// With checkpoints, barriers are injected beside Run, between its batches:
	// a Checkpointed source emits under the checkpoint lock itself; the batches
	// of any other are emitted under it here.
	emit := t.tc.CheckpointLock
	ended := false
	ckCtx, stop := context.WithCancel(ctx)
	ckErr := make(chan error, 1)
	go func() { ckErr <- t.sourceCheckpoints(ckCtx, emit, head, &ended) }()
	out := head
	if _, ok := t.source.(Checkpointed); !ok {
		out = &lockedCollector{mu: emit, next: head}
	}
	err := t.source.Run(ctx, out)
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	emit.Lock()
	ended = true
	if err == nil {
		err = head.CollectSignal(ctx, Signal{Kind: EndOfStream})
	}
	emit.Unlock()
	stop()
	if cerr := <-ckErr; err == nil {
		err = cerr
	}
	return err
}

// runInbox processes messages until every channel of every input has ended.
//
// Watermarks are forwarded as the minimum over all channels. A checkpoint's
// barrier is aligned: a channel that delivered it is held back (its messages
// buffered) until every channel still open has, then the barrier goes through
// the chain, the operators' states are taken, and the held messages are
// processed before the inbox again.
func (t *streamTask) runInbox(ctx context.Context) error {
	op := t.chain[0]
	next := t.collectors()[0]
	fs := t.flushers()
	lastFlush := time.Now()
	var flushTimer <-chan time.Time // armed while a flush waits for minFlushInterval
	doFlush := func() error {
		lastFlush, flushTimer = time.Now(), nil
		return flush(ctx, fs)
	}
	ended := make([]int, len(t.channels))
	total := 0
	for _, n := range t.channels {
		total += n
	}
	type chanKey struct{ input, channel int }
	var (
		endedAll   int
		watermarks = map[chanKey]int64{}
		emittedWM  = int64(-1 << 63)
		// Barrier alignment.
		aligning   int64 // the checkpoint being aligned, 0 when none
		alignStart time.Time
		blocked    = map[chanKey]bool{}
		held       []Message // messages of blocked channels, in arrival order
		replay     []Message // held messages to process before the inbox
		completes  chan int64
	)
	if t.ckpt != nil {
		completes = t.ckpt.completes
	}
	defer func() { // a failure or cancellation may leave held batches
		for _, m := range append(held, replay...) {
			if m.IsData() {
				m.Batch.Rec.Release()
			}
		}
	}()
	// finishAlignment passes the aligned barrier on, snapshots, and releases the
	// held channels.
	finishAlignment := func() error {
		id := aligning
		align := time.Since(alignStart)
		aligning = 0
		clear(blocked)
		replay = append(held, replay...)
		held = nil
		if err := op.ProcessSignal(ctx, 0, Signal{Kind: Barrier, Checkpoint: id}, next); err != nil {
			return err
		}
		if t.ckpt != nil {
			var st taskState
			err := t.snapshotOps(ctx, id, &st)
			t.store(ctx, id, st, align, err)
		}
		return nil
	}
	for endedAll < total {
		var m Message
		if len(replay) > 0 {
			m, replay = replay[0], replay[1:]
		} else {
			select {
			case m = <-t.inbox:
			case id := <-completes:
				if err := t.notifyComplete(ctx, id); err != nil {
					return err
				}
				continue
			case <-flushTimer:
				if err := doFlush(); err != nil {
					return err
				}
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		key := chanKey{m.Input, m.Channel}
		if blocked[key] {
			held = append(held, m)
			continue
		}
		if m.IsData() {
			t.tc.Metrics.RowsIn.Add(int64(m.Batch.NumRows()))
			t.tc.Metrics.BatchesIn.Add(1)
			err := op.ProcessBatch(ctx, m.Input, m.Batch, next)
			m.Batch.Rec.Release()
			if err != nil {
				return err
			}
			if len(fs) > 0 {
				since := time.Since(lastFlush)
				switch {
				case since >= flushInterval || len(t.inbox) == 0 && since >= minFlushInterval:
					if err := doFlush(); err != nil {
						return err
					}
				case len(t.inbox) == 0 && flushTimer == nil:
					flushTimer = time.After(minFlushInterval - since)
				}
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
			// A channel that ends no longer owes the barrier being aligned.
			if aligning != 0 && len(blocked) == total-endedAll {
				if err := finishAlignment(); err != nil {
					return err
				}
			}
		case Watermark:
			watermarks[key] = m.Signal.Watermark
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
			id := m.Signal.Checkpoint
			switch {
			case aligning == 0:
				aligning, alignStart = id, time.Now()
			case id < aligning:
				continue // of a checkpoint already given up for a newer one
			case id > aligning:
				// A newer checkpoint overtook one a channel never delivered
				// (its source had ended): give the old one up.
				aligning, alignStart = id, time.Now()
				clear(blocked)
				replay = append(held, replay...)
				held = nil
			}
			blocked[key] = true
			if len(blocked) == total-endedAll {
				if err := finishAlignment(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// drain releases every batch still queued in the inbox of a task that stopped
// early, and in the inboxes of its network tasks, so a failed or cancelled job
// gives back all its memory. It is called once every task of the job has
// returned: a task that is cancelled may still queue a batch for its network
// task after that one stopped (a select takes either of its ready cases).
func (t *streamTask) drain() {
	drainInbox(t.inbox)
	for _, nt := range t.netTasks {
		drainInbox(nt.inbox)
	}
}

// drainInbox releases the batches queued in inbox (which may be nil).
func drainInbox(inbox chan Message) {
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

// Package task is the paper's StreamTask: one parallel instance of a JobGraph
// vertex, running its fused chain of operators in a slot (this file). Inside
// the chain operators call each other directly; between tasks there are
// bounded queues, the inbox a task reads (with its barrier alignment and
// watermark merging, runInbox) and the Output at the end of its chain, which
// spreads batches over the channels of its out edges by forward, hash,
// rebalance or broadcast partitioning (exchange.go). checkpoint.go is the
// task's side of checkpoints: barriers injected at sources, operators'
// snapshots stored, restores.
//
// A channel is a Sender: a LocalChannel into an inbox in the same TaskManager,
// or a network channel, which the TaskManager wires in; so the task imports
// nothing of exec/network. It may import exec, exec/vector, exec/state and
// exec/checkpoint.
package task

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
)

// A task flushes its Flusher operators (a streaming aggregation's updates) when
// its inbox runs empty, but not more often than every minFlushInterval, so that
// a busy stream's groups change a few times a second rather than at every
// batch, and at least every flushInterval when the inbox never runs empty.
const (
	minFlushInterval = 50 * time.Millisecond
	flushInterval    = 100 * time.Millisecond
)

// StreamTask runs one ExecTask: a source (for source vertices) or an inbox feeding
// the fused chain of operators, whose end writes to the task's output channels.
// Inside the chain operators call each other directly; only the inbox is a queue.
// The TaskManager builds it (newStreamTask), points its output at the channels of
// its out edges (output().addEdge), and runs it in a slot.
type StreamTask struct {
	tc     *exec.TaskContext
	source exec.Source       // nil unless the vertex starts with a source
	chain  []exec.Operator   // the operators after the source, in chain order
	inbox  chan exec.Message // nil for sources
	// channels[i] is the number of channels feeding input i.
	channels []int
	out      *Output
	// late, when the vertex has late edges, takes the late rows of its
	// LateEmitter operators (exec.TaskContext.Late); nil otherwise.
	late *Output
	// ckpt is the task's part in checkpointing; nil when the job takes none.
	ckpt *taskCheckpoints
	// view is the task's view operator, if its chain ends with one.
	view exec.ViewReader
	// ended says the checkpoint the task restored from lists it as ended: it
	// ran to its end in an earlier attempt, and everything it emitted is in
	// the state of the tasks after it (runEnded).
	ended bool
	// clock divides the task's time among its operators; nil until it runs,
	// and with TaskContext.NoTaskMetrics. A source task's side goroutines
	// (barriers, ticks) call into the chain only under the emit lock, as its
	// batches go, so its uses never overlap.
	clock *opClock
}

// New returns the task running chain in context tc, after source
// (for a source vertex) or fed by its inbox, which holds QueueCapacity
// messages, from channels[i] channels on input i.
func New(tc *exec.TaskContext, source exec.Source, chain []exec.Operator, channels []int) *StreamTask {
	t := &StreamTask{tc: tc, source: source, chain: chain, channels: channels,
		out: NewOutput(tc.Alloc, tc.Metrics)}
	if source == nil {
		t.inbox = make(chan exec.Message, exec.QueueCapacity)
		tc.Metrics.SetQueue(t.inbox)
	}
	n := len(chain)
	if source != nil {
		n++
	}
	if !tc.NoTaskMetrics {
		tc.Metrics.SetChainLength(n) // else ChainRows is nil: links count nothing
	}
	for _, op := range chain {
		if v, ok := op.(exec.ViewReader); ok {
			t.view = v
		}
	}
	return t
}

// Context returns the task's context.
func (t *StreamTask) Context() *exec.TaskContext { return t.tc }

// Inbox returns the inbox other tasks' channels into this one write to; nil for
// a source task.
func (t *StreamTask) Inbox() chan exec.Message { return t.inbox }

// Output returns the collector at the end of the chain, whose edges the
// TaskManager adds before the task runs.
func (t *StreamTask) Output() *Output { return t.out }

// LateOutput returns the collector of the task's late rows, whose late edges
// (exec.JobEdge.Late) the TaskManager adds before the task runs, and makes it
// the task context's Late.
func (t *StreamTask) LateOutput() *Output {
	if t.late == nil {
		t.late = NewOutput(t.tc.Alloc, &exec.TaskMetrics{}) // late rows are not the task's output
		t.tc.Late = t.late
	}
	return t.late
}

// ViewReader returns the task's view operator, or nil.
func (t *StreamTask) ViewReader() exec.ViewReader { return t.view }

// chainLink feeds one operator of a fused chain: its Collect is the previous
// operator's output, and it passes the operator's own output to next. rows,
// when set, counts the previous operator's output (TaskMetrics.ChainRowsOut);
// clock, when set, times the operator as position pos of the chain
// (TaskMetrics.ChainNanos).
type chainLink struct {
	op    exec.Operator
	next  exec.Collector
	rows  *atomic.Int64
	clock *opClock
	pos   int
}

func (l *chainLink) Collect(ctx context.Context, b exec.Batch) error {
	if l.rows != nil {
		l.rows.Add(int64(b.NumRows()))
	}
	if l.clock == nil {
		return l.op.ProcessBatch(ctx, 0, b, l.next)
	}
	prev := l.clock.enter(l.pos)
	err := l.op.ProcessBatch(ctx, 0, b, l.next)
	l.clock.leave(prev)
	return err
}

func (l *chainLink) CollectSignal(ctx context.Context, s exec.Signal) error {
	prev := l.clock.enter(l.pos)
	err := l.op.ProcessSignal(ctx, 0, s, l.next)
	l.clock.leave(prev)
	return err
}

// outputLink is the output at the end of a timed chain: the time the last
// operator spends in it is the task's own (position -1), not the operator's,
// blocked time included.
type outputLink struct {
	exec.Collector
	clock *opClock
}

func (l *outputLink) Collect(ctx context.Context, b exec.Batch) error {
	prev := l.clock.enter(-1)
	err := l.Collector.Collect(ctx, b)
	l.clock.leave(prev)
	return err
}

func (l *outputLink) CollectSignal(ctx context.Context, s exec.Signal) error {
	prev := l.clock.enter(-1)
	err := l.Collector.CollectSignal(ctx, s)
	l.clock.leave(prev)
	return err
}

// timedOp is the first operator of a chain fed by the task's inbox, timed as
// its chainLink times the others.
type timedOp struct {
	exec.Operator
	clock *opClock
	pos   int
}

func (o timedOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	prev := o.clock.enter(o.pos)
	err := o.Operator.ProcessBatch(ctx, input, b, out)
	o.clock.leave(prev)
	return err
}

func (o timedOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	prev := o.clock.enter(o.pos)
	err := o.Operator.ProcessSignal(ctx, input, s, out)
	o.clock.leave(prev)
	return err
}

// collectors returns, for each operator of the chain, the Collector its output
// goes to. With late edges, the output of the chain's last LateEmitter (or
// the chain's end) also sends barriers and the end of stream to them.
func (t *StreamTask) collectors() []exec.Collector {
	cs := make([]exec.Collector, len(t.chain))
	tap := -1
	if t.late != nil {
		tap = len(t.chain) - 1
		for i, op := range t.chain {
			if l, ok := op.(exec.LateEmitter); ok && l.EmitsLate() {
				tap = i
			}
		}
	}
	var next exec.Collector = t.out
	if t.clock != nil {
		next = &outputLink{Collector: t.out, clock: t.clock}
	}
	for i := len(t.chain) - 1; i >= 0; i-- {
		cs[i] = next
		if i == tap {
			cs[i] = &lateSignals{Collector: next, late: t.late}
		}
		next = t.link(i, cs[i])
	}
	return cs
}

// link is the chainLink of t.chain[i], whose output goes to next.
func (t *StreamTask) link(i int, next exec.Collector) *chainLink {
	return &chainLink{op: t.chain[i], next: next, rows: t.tc.Metrics.ChainRows(t.feeder(i)), clock: t.clock, pos: t.feeder(i) + 1}
}

// feeder is the position in the vertex's chain (its source first, if it has
// one) of the operator whose output feeds t.chain[i]; -1 for the inbox.
func (t *StreamTask) feeder(i int) int {
	if t.source != nil {
		return i
	}
	return i - 1
}

// lateSignals passes on what an operator emits and sends its barriers and
// end of stream to the task's late edges too, after the late rows that came
// before them.
type lateSignals struct {
	exec.Collector
	late *Output
}

func (c *lateSignals) CollectSignal(ctx context.Context, s exec.Signal) error {
	if s.Kind == exec.Barrier || s.Kind == exec.EndOfStream {
		if err := c.late.CollectSignal(ctx, s); err != nil {
			return err
		}
	}
	return c.Collector.CollectSignal(ctx, s)
}

// Run executes the task to completion. A panic in an operator becomes the task's
// error, with the stack in the log, so one bad operator fails its job and not the
// process.
func (t *StreamTask) Run(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			t.tc.Log.Error("task panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("task %s: internal error: %v", t.tc.TaskName, r)
		}
	}()
	defer t.Close(context.WithoutCancel(ctx))
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
			t.ckpt.acks(exec.CheckpointAck{Task: t.ckpt.task, Finished: true})
		}
	}
	return err
}

func (t *StreamTask) open(ctx context.Context) error {
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

// Close closes the task's source and operators, once its state writes are
// done; Run calls it, and the TaskManager for a task it built but never ran.
func (t *StreamTask) Close(ctx context.Context) {
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

func (t *StreamTask) head() exec.Collector {
	if len(t.chain) == 0 {
		return t.out
	}
	return t.link(0, t.collectors()[0])
}

// flushers returns the chain's Flusher operators, in chain order, each with the
// Collector its output goes to.
func (t *StreamTask) flushers() []chainLink {
	return t.links(func(op exec.Operator) bool { _, ok := op.(exec.Flusher); return ok })
}

// links returns the chain's operators that is picks out, in chain order, each
// with the Collector its output goes to.
func (t *StreamTask) links(is func(exec.Operator) bool) []chainLink {
	var ls []chainLink
	cs := t.collectors()
	for i, op := range t.chain {
		if is(op) {
			ls = append(ls, chainLink{op: op, next: cs[i], clock: t.clock, pos: t.feeder(i) + 1})
		}
	}
	return ls
}

// flush flushes fs in chain order, so what one emits reaches the next first.
func flush(ctx context.Context, fs []chainLink) error {
	for _, l := range fs {
		prev := l.clock.enter(l.pos)
		err := l.op.(exec.Flusher).Flush(ctx, l.next)
		l.clock.leave(prev)
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *StreamTask) runSource(ctx context.Context) error {
	split := newTimeSplit(t.tc)
	defer split.next(false)
	t.clock = newOpClock(t.tc, 0) // the source runs between its batches
	defer t.clock.leave(0)
	var head exec.Collector = &countingCollector{next: t.head(), metrics: t.tc.Metrics, split: split}
	if fs := t.flushers(); len(fs) > 0 {
		// A source's batch is its own mini-batch: what it read at once.
		head = &flushingCollector{Collector: head, flushers: fs}
	}
	ticks := t.tickers()
	if t.ckpt == nil && len(ticks) == 0 {
		if err := t.source.Run(ctx, head); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		return head.CollectSignal(ctx, exec.Signal{Kind: exec.EndOfStream})
	}
	// With checkpoints, barriers are injected beside Run, between its batches:
	// a Checkpointed source emits under the checkpoint lock itself; the batches
	// of any other are emitted under it here. Ticks go in the same way, under
	// the checkpoint lock or, without checkpoints, a lock of their own.
	emit := t.tc.CheckpointLock
	if t.ckpt == nil {
		emit = new(sync.Mutex)
	}
	ended := false
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	sideCtx, stop := context.WithCancel(ctx)
	var sides []chan error
	side := func(f func() error) {
		c := make(chan error, 1)
		sides = append(sides, c)
		go func() {
			err := f()
			if err != nil {
				cancelRun(err)
			}
			c <- err
		}()
	}
	if t.ckpt != nil {
		side(func() error { return t.sourceCheckpoints(sideCtx, emit, head, &ended) })
	}
	if len(ticks) > 0 {
		side(func() error { return sourceTicks(sideCtx, emit, ticks, &ended) })
	}
	out := head
	if _, ok := t.source.(exec.Checkpointed); !ok || t.ckpt == nil {
		out = &lockedCollector{mu: emit, next: head}
	}
	err := t.source.Run(runCtx, out)
	if err == nil && runCtx.Err() != nil {
		err = context.Cause(runCtx)
	}
	emit.Lock()
	ended = true
	if err == nil {
		err = head.CollectSignal(ctx, exec.Signal{Kind: exec.EndOfStream})
	}
	emit.Unlock()
	stop()
	for _, c := range sides {
		if serr := <-c; err == nil {
			err = serr
		}
	}
	return err
}

// tickers returns the chain's Tickers, each with the collector after it.
func (t *StreamTask) tickers() []chainLink {
	return t.links(func(op exec.Operator) bool { _, ok := op.(exec.Ticker); return ok })
}

// tick ticks ts in chain order.
func tick(ctx context.Context, ts []chainLink, now time.Time) error {
	for _, l := range ts {
		prev := l.clock.enter(l.pos)
		err := l.op.(exec.Ticker).Tick(ctx, now, l.next)
		l.clock.leave(prev)
		if err != nil {
			return err
		}
	}
	return nil
}

// sourceTicks ticks the Tickers of a source task's chain every
// exec.TickInterval under emit, until ctx ends or the source has ended.
func sourceTicks(ctx context.Context, emit *sync.Mutex, ts []chainLink, ended *bool) error {
	tk := time.NewTicker(exec.TickInterval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tk.C:
			emit.Lock()
			var err error
			if !*ended {
				err = tick(ctx, ts, now)
			}
			emit.Unlock()
			if err != nil {
				return err
			}
		}
	}
}

// runInbox processes messages until every channel of every input has ended.
//
// Watermarks are forwarded as the minimum over all channels. A checkpoint's
// barrier is aligned: a channel that delivered it is held back (its messages
// buffered) until every channel still open has, then the barrier goes through
// the chain, the operators' states are taken, and the held messages are
// processed before the inbox again.
func (t *StreamTask) runInbox(ctx context.Context) error {
	split := newTimeSplit(t.tc)
	defer split.next(false)
	t.clock = newOpClock(t.tc, -1)
	defer t.clock.leave(-1)
	op := t.chain[0]
	pi, perInput := op.(exec.PerInputWatermarks)
	if t.clock != nil {
		op = timedOp{Operator: op, clock: t.clock, pos: 0}
	}
	next := t.collectors()[0]
	fs := t.flushers()
	ticks := t.tickers()
	var tickC <-chan time.Time // nil, never ready, without Tickers
	if len(ticks) > 0 {
		tk := time.NewTicker(exec.TickInterval)
		defer tk.Stop()
		tickC = tk.C
	}
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
		idle       = map[chanKey]bool{} // channels that hold no watermark back: idle, or ended
		sentIdle   bool                 // every channel was idle, and downstream was told
		emittedWM  = int64(-1 << 63)
		// An operator taking each input's watermark apart gets, per input,
		// the least over that input's channels once each has one or is idle.
		inputWM   = make([]int64, len(t.channels))
		inputIdle = make([]bool, len(t.channels))
	)
	perInput = perInput && pi.PerInputWatermarks()
	for i := range inputWM {
		inputWM[i] = -1 << 63
	}
	inputWatermark := func(in int) error {
		low, seen, ready := int64(1<<63-1), false, true
		for c := range t.channels[in] {
			k := chanKey{in, c}
			if w, ok := watermarks[k]; ok {
				low, seen = min(low, w), true
			} else if !idle[k] {
				ready = false
			}
		}
		switch {
		case !ready:
			return nil
		case !seen:
			if inputIdle[in] {
				return nil
			}
			inputIdle[in] = true
			return op.ProcessSignal(ctx, in, exec.Signal{Kind: exec.Idle}, next)
		case low > inputWM[in] || inputIdle[in]:
			inputWM[in], inputIdle[in] = max(low, inputWM[in]), false
			return op.ProcessSignal(ctx, in, exec.Signal{Kind: exec.Watermark, Watermark: inputWM[in]}, next)
		}
		return nil
	}
	var (
		// Barrier alignment.
		aligning   int64 // the checkpoint being aligned, 0 when none
		alignStart time.Time
		blocked    = map[chanKey]bool{}
		held       []exec.Message // messages of blocked channels, in arrival order
		replay     []exec.Message // held messages to process before the inbox
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
		if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Barrier, Checkpoint: id}, next); err != nil {
			return err
		}
		if t.ckpt != nil {
			var st state.TaskSnapshot
			pending, err := t.snapshotOps(ctx, id, false, &st)
			t.store(ctx, id, st, pending, align, err)
		}
		return nil
	}
	for endedAll < total {
		var m exec.Message
		if len(replay) > 0 {
			m, replay = replay[0], replay[1:]
		} else {
			if len(t.inbox) == 0 {
				split.next(true)
			}
			select {
			case m = <-t.inbox:
				split.next(false)
			case id := <-completes:
				split.next(false)
				if err := t.notifyComplete(ctx, id); err != nil {
					return err
				}
				continue
			case <-flushTimer:
				split.next(false)
				if err := doFlush(); err != nil {
					return err
				}
				continue
			case now := <-tickC:
				split.next(false)
				if err := tick(ctx, ticks, now); err != nil {
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
		case exec.EndOfStream:
			ended[m.Input]++
			endedAll++
			delete(watermarks, key)
			idle[key] = true
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
		case exec.Watermark, exec.Idle:
			// The watermark is the least over the channels that are not idle.
			if m.Signal.Kind == exec.Idle {
				delete(watermarks, key)
				idle[key] = true
			} else {
				watermarks[key] = m.Signal.Watermark
				delete(idle, key)
				sentIdle = false
			}
			if perInput {
				if err := inputWatermark(m.Input); err != nil {
					return err
				}
				continue
			}
			if len(watermarks)+len(idle) < total {
				continue
			}
			if len(watermarks) == 0 {
				if !sentIdle && endedAll < total {
					sentIdle = true
					if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Idle}, next); err != nil {
						return err
					}
				}
				continue
			}
			low := int64(1<<63 - 1)
			for _, w := range watermarks {
				low = min(low, w)
			}
			if low > emittedWM {
				emittedWM = low
				if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: low}, next); err != nil {
					return err
				}
			}
		case exec.Barrier:
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

// Drain releases every batch still queued in the inbox of a task that stopped
// early, so a failed or cancelled job gives back all its memory. It is called
// once every task of the job has returned, when no one writes to the inbox.
func (t *StreamTask) Drain() { exec.DrainInbox(t.inbox) }

// flushingCollector flushes the chain after every batch a source emits.
type flushingCollector struct {
	exec.Collector
	flushers []chainLink
}

func (c *flushingCollector) Collect(ctx context.Context, b exec.Batch) error {
	if err := c.Collector.Collect(ctx, b); err != nil {
		return err
	}
	return flush(ctx, c.flushers)
}

// countingCollector counts what a source emits, and the time it took, before
// passing it on.
type countingCollector struct {
	next    exec.Collector
	metrics *exec.TaskMetrics
	split   *timeSplit
}

func (c *countingCollector) Collect(ctx context.Context, b exec.Batch) error {
	c.metrics.RowsIn.Add(int64(b.NumRows()))
	c.metrics.BatchesIn.Add(1)
	c.split.next(false)
	return c.next.Collect(ctx, b)
}

func (c *countingCollector) CollectSignal(ctx context.Context, s exec.Signal) error {
	return c.next.CollectSignal(ctx, s)
}

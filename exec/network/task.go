package network

import (
	"context"
	"sync"
	"time"

	"github.com/hummer-db/hummer/exec"
)

// Task is a network task of its own (NetworkOwn): the producing task queues
// messages for it as for a local channel, and its goroutine writes them to the
// network channel, ending after the end of stream.
type Task struct {
	inbox chan exec.Message
	out   *LazySender
	done  chan struct{} // closed when Run returns
}

// NewTask returns the network task writing to out, with an inbox of
// exec.QueueCapacity messages.
func NewTask(out *LazySender) *Task {
	return &Task{inbox: make(chan exec.Message, exec.QueueCapacity), out: out, done: make(chan struct{})}
}

// Finished is closed when the network task has stopped.
func (n *Task) Finished() <-chan struct{} { return n.done }

// Drain releases the batches left queued when the network task stopped early;
// call it once nothing queues any more.
func (n *Task) Drain() { exec.DrainInbox(n.inbox) }

// Push queues a batch (taking over the caller's reference) or a signal for the
// network task, blocking while its inbox is full, until ctx is cancelled.
// The time it blocks adds to the producing task's BackpressureNanos.
func (n *Task) Push(ctx context.Context, b exec.Batch, s exec.Signal) error {
	m := exec.Message{Batch: b, Signal: s}
	select {
	case n.inbox <- m:
		return nil
	default:
	}
	start := time.Now()
	defer func() { n.out.metrics.BackpressureNanos.Add(time.Since(start).Nanoseconds()) }()
	select {
	case n.inbox <- m:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Run writes what is queued to the network channel until the end of stream
// has gone out, a write fails or ctx is cancelled.
func (n *Task) Run(ctx context.Context) error {
	defer close(n.done)
	defer exec.DrainInbox(n.inbox) // what a failure or cancellation left queued (and see drain)
	for {
		var m exec.Message
		select {
		case m = <-n.inbox:
		case <-ctx.Done():
			return nil
		}
		if err := n.out.Push(ctx, m.Batch, m.Signal); err != nil {
			if m.IsData() {
				m.Batch.Rec.Release()
			}
			return err
		}
		if m.Signal.Kind == exec.EndOfStream {
			return nil
		}
	}
}

// LazySender is the sending end of a network channel, connected when the task
// first sends: TaskManagers deploy a job's tasks in no particular order, and the
// receiving TaskManager waits a while for its side to be registered.
type LazySender struct {
	cfg     DialConfig
	metrics *exec.TaskMetrics // NetBytesOut grows by what each send writes
	mu      sync.Mutex
	s       *Sender
}

// NewLazySender returns the sending end that dials cfg on its first Push and
// adds what it writes to metrics.NetBytesOut.
func NewLazySender(cfg DialConfig, metrics *exec.TaskMetrics) *LazySender {
	return &LazySender{cfg: cfg, metrics: metrics}
}

// Push is Sender.Push, after connecting the channel if it is not yet.
func (l *LazySender) Push(ctx context.Context, b exec.Batch, sig exec.Signal) error {
	if l.s == nil {
		s, err := Dial(ctx, l.cfg)
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.s = s
		l.mu.Unlock()
	}
	before := l.s.Stats().Bytes.Load()
	err := l.s.Push(ctx, b, sig)
	l.metrics.NetBytesOut.Add(l.s.Stats().Bytes.Load() - before)
	return err
}

// Close closes the connection if it was made; safe from any goroutine.
func (l *LazySender) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s != nil {
		l.s.Close()
	}
}

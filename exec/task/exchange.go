package task

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// Sender is the sending end of one ExecEdge. Push queues a batch (taking over the
// caller's reference on success) or a signal for the receiving task, blocking
// while the receiver applies backpressure, until ctx is cancelled. A local
// channel and a network channel (network.Sender) both are one.
type Sender interface {
	Push(ctx context.Context, b exec.Batch, s exec.Signal) error
}

// LocalChannel is the sending end of an ExecEdge within one TaskManager: the receiving
// task's inbox, and the input and channel numbers the receiver knows this sender
// by.
type LocalChannel struct {
	Inbox   chan<- exec.Message
	Input   int
	Channel int
	// Sender, when set, is the sending task's metrics: the time Push blocks
	// on a full inbox adds to its BackpressureNanos.
	Sender *exec.TaskMetrics
}

// Push queues m for the receiver, blocking while its inbox is full (this is the
// backpressure between tasks) until ctx is cancelled.
func (c LocalChannel) Push(ctx context.Context, b exec.Batch, s exec.Signal) error {
	m := exec.Message{Input: c.Input, Channel: c.Channel, Batch: b, Signal: s}
	select {
	case c.Inbox <- m:
		return nil
	default:
	}
	if c.Sender != nil {
		start := time.Now()
		defer func() { c.Sender.BackpressureNanos.Add(time.Since(start).Nanoseconds()) }()
	}
	select {
	case c.Inbox <- m:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// edgeWriter spreads one task's output over the channels of one JobEdge. targets
// is indexed by the receiving subtask; for a forward edge it holds only the
// receiver with the sender's own index.
type edgeWriter struct {
	part    exec.Partition
	targets []Sender
	next    int // round-robin position for Rebalance
}

// Output is the Collector at the end of a task's chain: it writes to
// every out edge of the vertex. Batches are borrowed from the chain, so each send
// takes its own reference (Retain), which the receiving task releases.
type Output struct {
	edges   []*edgeWriter
	mem     memory.Allocator
	metrics *exec.TaskMetrics
	parts   [][]int32 // sendHashed's, reused per batch
}

var _ exec.Collector = (*Output)(nil)

// NewOutput returns an output with no edges; its hash partitioning takes
// buffers from mem and it counts what it emits in metrics.
func NewOutput(mem memory.Allocator, metrics *exec.TaskMetrics) *Output {
	return &Output{mem: mem, metrics: metrics}
}

// AddEdge adds a JobEdge out of the task: part spreads the output over targets,
// the channels to the receiving subtasks in subtask order (for a forward edge,
// only the receiver with the task's own index).
func (o *Output) AddEdge(part exec.Partition, targets []Sender) {
	o.edges = append(o.edges, &edgeWriter{part: part, targets: targets})
}

// Collect sends b on every out edge, split by each edge's partitioning.
func (o *Output) Collect(ctx context.Context, b exec.Batch) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	o.metrics.RowsOut.Add(int64(n))
	o.metrics.BatchesOut.Add(1)
	for _, e := range o.edges {
		switch {
		case len(e.targets) == 1:
			if err := sendRetained(ctx, e.targets[0], b); err != nil {
				return err
			}
		case e.part.Kind == exec.Broadcast:
			for _, t := range e.targets {
				if err := sendRetained(ctx, t, b); err != nil {
					return err
				}
			}
		case e.part.Kind == exec.Hash:
			if err := o.sendHashed(ctx, e, b); err != nil {
				return err
			}
		default: // Rebalance
			t := e.targets[e.next%len(e.targets)]
			e.next++
			if err := sendRetained(ctx, t, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// CollectSignal sends s on every channel of every out edge.
func (o *Output) CollectSignal(ctx context.Context, s exec.Signal) error {
	for _, e := range o.edges {
		for _, t := range e.targets {
			if err := t.Push(ctx, exec.Batch{}, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func sendRetained(ctx context.Context, c Sender, b exec.Batch) error {
	b.Rec.Retain()
	if err := c.Push(ctx, b, exec.Signal{}); err != nil {
		b.Rec.Release()
		return err
	}
	return nil
}

// sendHashed splits b by the hash of its key columns and sends each part to its
// subtask.
func (o *Output) sendHashed(ctx context.Context, e *edgeWriter, b exec.Batch) error {
	// The hashes and each target's row numbers are scratch space, borrowed
	// from the pools for the call, so that the tasks of the next query reuse
	// them rather than allocate their own (a partial aggregate sends all its
	// groups at once, 58,733 rows for WordCount).
	n := b.NumRows()
	h := vector.PoolUint64.Get(n, false)
	defer vector.PoolUint64.Put(h)
	if err := vector.HashRows(b.Rec, e.part.Keys, h); err != nil {
		return err
	}
	if len(o.parts) < len(e.targets) {
		o.parts = make([][]int32, len(e.targets))
	}
	parts := o.parts[:len(e.targets)]
	for p := range parts {
		// About n/targets rows each, and room for a few more (beyond
		// that, append grows the part out of the pool).
		parts[p] = vector.PoolInt32.Get(n/len(parts)+n/(4*len(parts))+16, false)[:0]
	}
	defer func() {
		for p := range parts {
			vector.PoolInt32.Put(parts[p])
			parts[p] = nil
		}
	}()
	for i, v := range h {
		p := v % uint64(len(e.targets))
		parts[p] = append(parts[p], int32(i))
	}
	for p, idx := range parts {
		if len(idx) == 0 {
			continue
		}
		if len(idx) == n {
			if err := sendRetained(ctx, e.targets[p], b); err != nil {
				return err
			}
			continue
		}
		rec, err := vector.GatherRecord(o.mem, b.Rec, idx)
		if err != nil {
			return err
		}
		sub := exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, idx)}
		if err := e.targets[p].Push(ctx, sub, exec.Signal{}); err != nil {
			sub.Rec.Release()
			return err
		}
	}
	return nil
}

package exec

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// sender is the sending end of one ExecEdge. send queues a batch (taking over the
// caller's reference on success) or a signal for the receiving task, blocking
// while the receiver applies backpressure, until ctx is cancelled. A local
// channel and a network channel (NetSender) both are one.
type sender interface {
	send(ctx context.Context, b Batch, s Signal) error
}

// channel is the sending end of an ExecEdge within one TaskManager: the receiving
// task's inbox, and the input and channel numbers the receiver knows this sender
// by.
type channel struct {
	inbox   chan<- Message
	input   int
	channel int
}

// send queues m for the receiver, blocking while its inbox is full (this is the
// backpressure between tasks) until ctx is cancelled.
func (c channel) send(ctx context.Context, b Batch, s Signal) error {
	m := Message{Input: c.input, Channel: c.channel, Batch: b, Signal: s}
	select {
	case c.inbox <- m:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// edgeWriter spreads one task's output over the channels of one JobEdge. targets
// is indexed by the receiving subtask; for a forward edge it holds only the
// receiver with the sender's own index.
type edgeWriter struct {
	part    Partition
	targets []sender
	next    int // round-robin position for Rebalance
}

// outputCollector is the Collector at the end of a task's chain: it writes to
// every out edge of the vertex. Batches are borrowed from the chain, so each send
// takes its own reference (Retain), which the receiving task releases.
type outputCollector struct {
	edges   []*edgeWriter
	mem     memory.Allocator
	metrics *TaskMetrics
	parts   [][]int32 // sendHashed's, reused per batch
}

var _ Collector = (*outputCollector)(nil)

func (o *outputCollector) Collect(ctx context.Context, b Batch) error {
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
		case e.part.Kind == Broadcast:
			for _, t := range e.targets {
				if err := sendRetained(ctx, t, b); err != nil {
					return err
				}
			}
		case e.part.Kind == Hash:
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

func (o *outputCollector) CollectSignal(ctx context.Context, s Signal) error {
	for _, e := range o.edges {
		for _, t := range e.targets {
			if err := t.send(ctx, Batch{}, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func sendRetained(ctx context.Context, c sender, b Batch) error {
	b.Rec.Retain()
	if err := c.send(ctx, b, Signal{}); err != nil {
		b.Rec.Release()
		return err
	}
	return nil
}

// sendHashed splits b by the hash of its key columns and sends each part to its
// subtask.
func (o *outputCollector) sendHashed(ctx context.Context, e *edgeWriter, b Batch) error {
	// The hashes and each target's row numbers are scratch space, borrowed
	// from the pools for the call, so that the tasks of the next query reuse
	// them rather than allocate their own (a partial aggregate sends all its
	// groups at once, 58,733 rows for WordCount).
	n := b.NumRows()
	h := poolUint64.get(n, false)
	defer poolUint64.put(h)
	if err := HashRows(b.Rec, e.part.Keys, h); err != nil {
		return err
	}
	if len(o.parts) < len(e.targets) {
		o.parts = make([][]int32, len(e.targets))
	}
	parts := o.parts[:len(e.targets)]
	for p := range parts {
		// About n/targets rows each, and room for a few more (beyond
		// that, append grows the part out of the pool).
		parts[p] = poolInt32.get(n/len(parts)+n/(4*len(parts))+16, false)[:0]
	}
	defer func() {
		for p := range parts {
			poolInt32.put(parts[p])
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
		rec, err := gatherRecord(o.mem, b.Rec, idx)
		if err != nil {
			return err
		}
		sub := Batch{Rec: rec, Ops: gatherOps(b.Ops, idx)}
		if err := e.targets[p].send(ctx, sub, Signal{}); err != nil {
			sub.Rec.Release()
			return err
		}
	}
	return nil
}

// HashRows writes into out (len = rows) a hash of each row's key columns. Equal
// values of equal types hash equally in every process (no random seed), so two
// edges partitioning join keys of the same types agree, and so will TaskManagers
// in different processes.
func HashRows(rec arrow.RecordBatch, keys []int, out []uint64) error {
	for i := range out {
		out[i] = 0x9e3779b97f4a7c15
	}
	for _, k := range keys {
		col := rec.Column(k)
		switch a := col.(type) {
		case *array.Int64:
			for i, v := range a.Int64Values() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Timestamp:
			for i, v := range a.TimestampValues() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Float64:
			for i, v := range a.Float64Values() {
				if v == 0 {
					v = 0 // -0 and +0 are equal
				}
				out[i] = mix(out[i], math.Float64bits(v))
			}
		case *array.Boolean:
			for i := range out {
				if a.Value(i) {
					out[i] = mix(out[i], 1)
				} else {
					out[i] = mix(out[i], 2)
				}
			}
		case *array.Decimal128:
			for i := range out {
				v := a.Value(i)
				out[i] = mix(mix(out[i], uint64(v.HighBits())), v.LowBits())
			}
		case *array.String:
			offs := a.ValueOffsets()
			data := a.ValueBytes()
			base := offs[0]
			for i := range out {
				// The key tables' hash, unseeded.
				s, e := int(offs[i]-base), int(offs[i+1]-base)
				var h uint64
				if n := e - s; n <= 16 && s+16 <= cap(data) {
					h, _, _ = shortKey(data[s:s+16], uint(n), hashK0, hashK1)
				} else {
					h, _, _ = hashKey(data[s:e], 0)
				}
				out[i] = mix(out[i], h)
			}
		case *array.Null:
			// every row is NULL: the same hash for all
		default:
			return fmt.Errorf("exec: cannot hash column of type %v", col.DataType())
		}
		if col.NullN() > 0 {
			for i := range out {
				if col.IsNull(i) {
					out[i] = mix(out[i], 0x5bd1e995)
				}
			}
		}
	}
	return nil
}

// mix folds v into h (a splitmix64 step over their combination).
func mix(h, v uint64) uint64 {
	x := h ^ (v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2))
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

package operators

// Grace hash join, for a bounded join whose held rows outgrow its budget: it
// writes the build side and the pending left batches, and from then on every
// batch of either input, to spill files partitioned by the hash of the join
// keys (spill.go). Equal keys hash alike on both sides, so each partition
// joins on its own: once both inputs have ended, a fresh join of the same
// config builds each partition's right rows and probes its left rows, and
// spills again (by the next bits of the hash) if a partition is still too
// big. A left join's unmatched rows come out of their partition's join, as
// they would have from the whole.

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
)

// joinSpill is a spilling join's two partitioned inputs.
type joinSpill struct {
	left, right *partitionedSpill
}

func (sp *joinSpill) remove() {
	sp.left.remove()
	sp.right.remove()
}

// checkBudget starts spilling once the rows held pass half the budget.
func (o *hashJoinOp) checkBudget() error {
	if o.budget <= 0 || o.held <= o.budget/2 {
		return nil
	}
	dir := spillDir(o.tc)
	right, err := newPartitionedSpill("hash_join", dir, o.level)
	if err != nil {
		return err
	}
	left, err := newPartitionedSpill("hash_join", dir, o.level)
	if err != nil {
		right.remove()
		return err
	}
	o.spill = &joinSpill{left: left, right: right}
	held, pending := o.right, o.pending
	o.right, o.pending, o.held = nil, nil, 0
	defer func() {
		for _, r := range held {
			r.Release()
		}
		for _, b := range pending {
			b.Rec.Release()
		}
	}()
	for _, r := range held {
		if err := o.spill.right.write(o.mem, r, nil, o.cfg.RightKeys); err != nil {
			return err
		}
	}
	for _, b := range pending {
		if err := o.spillLeft(b); err != nil {
			return err
		}
	}
	return nil
}

// spillLeft writes a left batch to its partitions. Its keys must have the
// right side's types (JoinConfig.Right), or equal keys would hash apart.
func (o *hashJoinOp) spillLeft(b exec.Batch) error {
	for i, c := range o.cfg.LeftKeys {
		if c < 0 || c >= int(b.Rec.NumCols()) {
			return fmt.Errorf("hash_join: key column %d out of range (%d columns)", c, b.Rec.NumCols())
		}
		if r := o.cfg.RightKeys[i]; r >= 0 && r < len(o.cfg.Right) {
			rt := o.cfg.Right[r].Type.Arrow()
			if lt := b.Rec.Column(c).DataType(); !arrow.TypeEqual(lt, rt) {
				return fmt.Errorf("hash_join: key %d is %s on the left and %s on the right", i, lt, rt)
			}
		}
	}
	return o.spill.left.write(o.mem, b.Rec, b.Ops, o.cfg.LeftKeys)
}

// drainSpill joins each partition with a fresh join of the same config, one
// level of partitioning down, and sends its rows to out.
func (o *hashJoinOp) drainSpill(ctx context.Context, out exec.Collector) error {
	sp := o.spill
	o.spill = nil
	defer sp.remove()
	rights, err := sp.right.finish()
	if err != nil {
		return err
	}
	lefts, err := sp.left.finish()
	if err != nil {
		return err
	}
	swallow := signalSwallower{out}
	for p := range spillParts {
		switch {
		case lefts[p] == nil && rights[p] == nil,
			lefts[p] == nil && !o.full,
			rights[p] == nil && !o.left && o.semi != leftAnti:
			continue // no row of this partition can come out
		}
		child, err := newHashJoinOp(o.spec)
		if err != nil {
			return err
		}
		c := child.(*hashJoinOp)
		c.level = o.level + 1
		if err := c.Open(ctx, o.tc); err != nil {
			return err
		}
		c.budget = o.budget
		if c.level >= maxSpillLevel {
			c.budget = 0 // one key too big on its own: in memory it is
		}
		err = o.joinPartition(ctx, c, rights[p], lefts[p], swallow)
		c.Close(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

// joinPartition feeds child a partition's right rows (right may be nil), then
// its left rows.
func (o *hashJoinOp) joinPartition(ctx context.Context, child *hashJoinOp, right, left *spillFile, out exec.Collector) error {
	if right != nil {
		if err := right.read(o.mem, func(b exec.Batch) error { return child.ProcessBatch(ctx, 1, b, out) }); err != nil {
			return err
		}
	}
	if err := child.ProcessSignal(ctx, 1, exec.Signal{Kind: exec.EndOfStream}, out); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if left != nil {
		if err := left.read(o.mem, func(b exec.Batch) error { return child.ProcessBatch(ctx, 0, b, out) }); err != nil {
			return err
		}
	}
	return child.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, out)
}

package operators

// Spilling hash aggregation, as PostgreSQL 13's and DuckDB's do: a complete
// or final hash_agg whose groups outgrow its budget stops adding groups. Rows
// of groups it holds are folded in as before; rows of any other group are
// written, partitioned by the hash of their keys, to spill files. At end of
// stream it emits its groups and frees them, then aggregates each partition
// with a fresh operator of the same config, which spills again (by the next
// bits of the hash) if a partition is still too big. Every row of one group
// goes to one partition, so each group is emitted once, whole.

import (
	"context"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// overBudget reports whether the groups hold more than the budget.
func (o *hashAggOp) overBudget() bool { return o.groupBytes() > o.budget }

// groupBytes is the memory the groups hold: keys and aggregate states.
func (o *hashAggOp) groupBytes() int64 {
	n := o.table.Bytes()
	for _, a := range o.aggs {
		n += a.memBytes()
	}
	return n
}

// restartPartial sends a partial aggregate's groups on and empties it,
// keeping its table's arrays when keep is set (restarting for the memory
// budget must free them).
func (o *hashAggOp) restartPartial(ctx context.Context, out exec.Collector, keep bool) error {
	if err := o.emit(ctx, out); err != nil {
		return err
	}
	if kt, ok := o.table.(*state.KeyTable); ok && keep {
		kt.Reset()
	} else {
		o.table.Release()
		o.table = o.newTable()
	}
	o.partialRows, o.partialRuns = 0, 0
	_, err := o.buildAggs()
	return err
}

// foldSpilling folds the rows of the groups held into them and spills the
// others.
func (o *hashAggOp) foldSpilling(b exec.Batch) error {
	rec, n := b.Rec, b.NumRows()
	if err := o.encodeKeys(rec, n); err != nil {
		return err
	}
	o.found = vector.GrowSlice(o.found, n)
	o.table.FindRows(&o.keys, o.found)
	in, spilled := o.inIdx[:0], o.outIdx[:0]
	for i, id := range o.found[:n] {
		if id >= 0 {
			in = append(in, int32(i))
		} else {
			spilled = append(spilled, int32(i))
		}
	}
	o.inIdx, o.outIdx = in, spilled
	switch len(spilled) {
	case 0:
	case n:
		if err := o.spill.write(o.mem, rec, b.Ops, o.keyCols); err != nil {
			return err
		}
	default:
		sub, err := vector.GatherRecord(o.mem, rec, spilled)
		if err != nil {
			return err
		}
		err = o.spill.write(o.mem, sub, vector.GatherOps(b.Ops, spilled), o.keyCols)
		sub.Release()
		if err != nil {
			return err
		}
	}
	if len(in) == 0 {
		return nil
	}
	o.gids = vector.GrowSlice(o.gids, len(in))
	gids := o.gids
	for j, i := range in {
		gids[j] = uint32(o.found[i])
	}
	if len(in) == n {
		return o.foldInto(rec, b.Ops, gids)
	}
	sub, err := vector.GatherRecord(o.mem, rec, in)
	if err != nil {
		return err
	}
	defer sub.Release()
	return o.foldInto(sub, vector.GatherOps(b.Ops, in), gids)
}

// drainSpill aggregates each spilled partition with a fresh operator of the
// same config, one level of partitioning down, and sends its groups to out.
func (o *hashAggOp) drainSpill(ctx context.Context, out exec.Collector) error {
	sp := o.spill
	o.spill = nil
	defer sp.remove()
	parts, err := sp.finish()
	if err != nil {
		return err
	}
	for _, part := range parts {
		if part == nil {
			continue
		}
		child, err := newHashAgg(o.cfg, o.spec)
		if err != nil {
			return err
		}
		child.level = o.level + 1
		if err := child.Open(ctx, o.tc); err != nil {
			return err
		}
		child.budget = o.budget
		if child.level >= maxSpillLevel {
			child.budget = 0 // one group too big on its own: in memory it is
		}
		err = part.read(o.mem, func(b exec.Batch) error { return child.ProcessBatch(ctx, 0, b, out) })
		if err == nil {
			err = child.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, signalSwallower{out})
		}
		child.Close(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

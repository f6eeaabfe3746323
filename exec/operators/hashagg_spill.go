package operators

// Spilling hash aggregation, as PostgreSQL 13's and DuckDB's do: a complete
// or final hash_agg whose groups outgrow its budget stops adding groups. Rows
// of groups it holds are folded in as before; rows of any other group are
// written, partitioned by the hash of their keys, to spill files. At end of
// stream it emits its groups and frees them, then aggregates each partition
// with a fresh operator of the same config, which spills again (by the next
// bits of the hash) if a partition is still too big. Every row of one group
// goes to one partition, so each group is emitted once, whole.
//
// A spill file is an Arrow IPC stream of the input's rows with their change
// kinds as one more column ("$op").

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	// spillBits of the keys' hash choose a row's partition: 16 files.
	spillBits  = 4
	spillParts = 1 << spillBits
	// maxSpillLevel is how many times a partition is split again; past it
	// (a group too big for the budget on its own) it is aggregated in memory.
	maxSpillLevel = 8
)

// aggSpill is a hash_agg's spill: its directory and one file per partition.
type aggSpill struct {
	dir    string
	level  int // which bits of the hash choose the partition
	schema *arrow.Schema
	parts  [spillParts]*spillPart
	hashes []uint64
	idx    [spillParts][]int32
}

type spillPart struct {
	f    *os.File
	w    *ipc.Writer
	rows int64
}

func newAggSpill(parent string, level int) (*aggSpill, error) {
	dir, err := os.MkdirTemp(parent, "hummer-hash-agg-")
	if err != nil {
		return nil, fmt.Errorf("hash_agg: spilling to disk: %w", err)
	}
	return &aggSpill{dir: dir, level: level}, nil
}

// write appends the rows of rec (with change kinds ops, nil for inserts) to
// their partitions, by the hash of columns keys.
func (s *aggSpill) write(mem memory.Allocator, rec arrow.RecordBatch, ops []exec.ChangeKind, keys []int) error {
	n := int(rec.NumRows())
	if s.schema == nil {
		fields := append(rec.Schema().Fields(), arrow.Field{Name: "$op", Type: arrow.PrimitiveTypes.Int8})
		s.schema = arrow.NewSchema(fields, nil)
	}
	s.hashes = vector.GrowSlice(s.hashes, n)
	if err := vector.HashRows(rec, keys, s.hashes); err != nil {
		return err
	}
	// The top bits first: the low ones chose the subtask (exchange.go).
	shift := 64 - spillBits*(s.level+1)
	for p := range s.idx {
		s.idx[p] = s.idx[p][:0]
	}
	for i, h := range s.hashes {
		p := (h >> shift) & (spillParts - 1)
		s.idx[p] = append(s.idx[p], int32(i))
	}
	for p, idx := range s.idx {
		if len(idx) == 0 {
			continue
		}
		part, err := s.part(p, mem)
		if err != nil {
			return err
		}
		sub, err := vector.GatherRecord(mem, rec, idx)
		if err != nil {
			return err
		}
		ob := array.NewInt8Builder(mem)
		for _, i := range idx {
			op := exec.Insert
			if ops != nil {
				op = ops[i]
			}
			ob.Append(int8(op))
		}
		opCol := ob.NewArray()
		ob.Release()
		cols := append(append([]arrow.Array(nil), sub.Columns()...), opCol)
		withOps := array.NewRecordBatch(s.schema, cols, int64(len(idx)))
		err = part.w.Write(withOps)
		withOps.Release()
		opCol.Release()
		sub.Release()
		if err != nil {
			return fmt.Errorf("hash_agg: spilling to disk: %w", err)
		}
		part.rows += int64(len(idx))
	}
	return nil
}

func (s *aggSpill) part(p int, mem memory.Allocator) (*spillPart, error) {
	if s.parts[p] != nil {
		return s.parts[p], nil
	}
	f, err := os.CreateTemp(s.dir, fmt.Sprintf("part%02d-*.arrows", p))
	if err != nil {
		return nil, fmt.Errorf("hash_agg: spilling to disk: %w", err)
	}
	s.parts[p] = &spillPart{f: f, w: ipc.NewWriter(f, ipc.WithSchema(s.schema), ipc.WithAllocator(mem))}
	return s.parts[p], nil
}

// finish closes the partitions' writers and returns the partitions that hold
// rows, to be read back (spillPart.read).
func (s *aggSpill) finish() ([]*spillPart, error) {
	var out []*spillPart
	for _, part := range s.parts {
		if part == nil {
			continue
		}
		if err := part.w.Close(); err != nil {
			return nil, fmt.Errorf("hash_agg: spilling to disk: %w", err)
		}
		if part.rows > 0 {
			out = append(out, part)
		}
	}
	return out, nil
}

// read hands take each batch of the partition, in the order written; take
// borrows the batch.
func (part *spillPart) read(mem memory.Allocator, take func(exec.Batch) error) error {
	if _, err := part.f.Seek(0, 0); err != nil {
		return fmt.Errorf("hash_agg: reading back a spill file: %w", err)
	}
	r, err := ipc.NewReader(part.f, ipc.WithAllocator(mem))
	if err != nil {
		return fmt.Errorf("hash_agg: reading back a spill file: %w", err)
	}
	defer r.Release()
	for r.Next() {
		b, err := splitOps(r.RecordBatch())
		if err != nil {
			return err
		}
		err = take(b)
		b.Rec.Release()
		if err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("hash_agg: reading back a spill file: %w", err)
	}
	return nil
}

// splitOps turns a spilled record back into a batch: its last column holds
// the change kinds (nil when all are inserts).
func splitOps(rec arrow.RecordBatch) (exec.Batch, error) {
	nc := int(rec.NumCols())
	opCol, ok := rec.Column(nc - 1).(*array.Int8)
	if !ok {
		return exec.Batch{}, errors.New("hash_agg: a spill file without its change kinds")
	}
	var ops []exec.ChangeKind
	for i, v := range opCol.Int8Values() {
		// The rows before the first that is not an insert are inserts (0).
		if v != int8(exec.Insert) && ops == nil {
			ops = make([]exec.ChangeKind, opCol.Len())
		}
		if ops != nil {
			ops[i] = exec.ChangeKind(v)
		}
	}
	fields := rec.Schema().Fields()[:nc-1]
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), rec.Columns()[:nc-1], rec.NumRows())
	return exec.Batch{Rec: out, Ops: ops}, nil
}

// remove deletes the spill files and their directory.
func (s *aggSpill) remove() {
	for _, part := range s.parts {
		if part != nil {
			part.w.Close()
			part.f.Close()
		}
	}
	os.RemoveAll(s.dir)
}

// signalSwallower passes a child aggregate's rows on, not its end of stream:
// the parent forwards its own.
type signalSwallower struct{ exec.Collector }

func (signalSwallower) CollectSignal(context.Context, exec.Signal) error { return nil }

// overBudget reports whether the groups hold more than the budget.
func (o *hashAggOp) overBudget() bool {
	n := o.table.Bytes()
	for _, a := range o.aggs {
		n += a.memBytes()
	}
	return n > o.budget
}

// spillDir is where the operator spills: the task's SpillDir, or the system's
// temporary directory.
func (o *hashAggOp) spillDir() string {
	if o.tc != nil && o.tc.SpillDir != "" {
		return o.tc.SpillDir
	}
	return os.TempDir()
}

// restartPartial sends a partial aggregate's groups on and empties it.
func (o *hashAggOp) restartPartial(ctx context.Context, out exec.Collector) error {
	if err := o.emit(ctx, out); err != nil {
		return err
	}
	o.table.Release()
	o.table = state.NewKeyTable()
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

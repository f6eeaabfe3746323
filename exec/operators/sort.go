package operators

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// sortOp is kind "sort" (see SortConfig). It retains its input; at end of
// stream it concatenates it, sorts a permutation of the rows (stable, so ties
// keep their arrival order) and emits rows Offset..Offset+Limit of it (all when
// Limit < 0), gathered in batches of at most vector.OutBatchRows rows, then forwards
// EndOfStream.
//
// Memory: with a Limit (top-N) it keeps only the first Offset+Limit rows, sorting
// what it holds down to them whenever it holds twice as many (and at least
// topNCompactRows). Past half its budget (SortConfig.MemoryLimit, else the task's
// WorkMem) it sorts what it holds into a run on disk; at end of stream the runs
// are merged (sort_spill.go). Half, because sorting copies the rows once.
//
// Order, as PostgreSQL's with the C collation: numbers by value (NaN above all
// doubles), text by bytes, false before true. A key's NULLs come first exactly
// when its NullsFirst is set, whatever its direction: the planner sets it for
// DESC keys to get PostgreSQL's default (NULLS FIRST for DESC, LAST for ASC).
type sortOp struct {
	cfg     SortConfig
	mem     memory.Allocator
	tc      *exec.TaskContext
	budget  int64
	batches []exec.Batch
	bytes   int64 // of the batches held
	rows    int
	done    bool
	spill   *sortSpill // nil until the first run is written
}

// topNCompactRows is the fewest rows a top-N sorts down to its N.
const topNCompactRows = 4 * vector.OutBatchRows

var _ exec.Operator = (*sortOp)(nil)

func newSortOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg SortConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("sort: bad config: %w", err)
	}
	if cfg.Offset < 0 {
		return nil, fmt.Errorf("sort: negative offset %d", cfg.Offset)
	}
	return &sortOp{cfg: cfg}, nil
}

func (o *sortOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	o.tc = tc
	o.budget = spillBudget(o.cfg.MemoryLimit, tc)
	return nil
}

// keep is how many rows of the sorted input can be emitted: Offset+Limit, or
// -1 for all.
func (o *sortOp) keep() int64 {
	if o.cfg.Limit < 0 {
		return -1
	}
	return o.cfg.Offset + o.cfg.Limit
}

func (o *sortOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if o.done {
		return fmt.Errorf("sort: batch after end of stream")
	}
	b.Rec.Retain()
	if b.Ops != nil {
		b.Ops = slices.Clone(b.Ops)
	}
	o.batches = append(o.batches, b)
	o.rows += n
	o.bytes += vector.RecordBytes(b.Rec)
	if k := o.keep(); k >= 0 && int64(o.rows) >= max(2*k, topNCompactRows) {
		if err := o.compact(k); err != nil {
			return err
		}
	}
	if o.budget > 0 && o.bytes > o.budget/2 {
		return o.spillRun()
	}
	return nil
}

// compact sorts the rows held down to the first k.
func (o *sortOp) compact(k int64) error {
	rec, ops, perm, err := o.sorted()
	if err != nil {
		return err
	}
	defer rec.Release()
	perm = perm[:min(int64(len(perm)), k)]
	top, err := vector.GatherRecord(o.mem, rec, perm)
	if err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	o.batches = []exec.Batch{{Rec: top, Ops: vector.GatherOps(ops, perm)}}
	o.rows = len(perm)
	o.bytes = vector.RecordBytes(top)
	return nil
}

func (o *sortOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if s.Kind != exec.EndOfStream {
		return out.CollectSignal(ctx, s)
	}
	if o.done {
		return nil
	}
	o.done = true
	var err error
	if o.spill != nil {
		if err = o.spillRun(); err == nil {
			err = o.spill.merge(ctx, o, out)
		}
	} else {
		err = o.emit(ctx, out)
	}
	o.release()
	if err != nil {
		return err
	}
	return out.CollectSignal(ctx, s)
}

// emit sends rows Offset..Offset+Limit of the sorted rows held.
func (o *sortOp) emit(ctx context.Context, out exec.Collector) error {
	if o.rows == 0 {
		return nil
	}
	lo := o.cfg.Offset
	hi := int64(o.rows)
	if k := o.keep(); k >= 0 {
		hi = min(hi, k)
	}
	if lo >= hi {
		return nil
	}
	rec, ops, perm, err := o.sorted()
	if err != nil {
		return err
	}
	defer rec.Release()
	return o.emitPerm(rec, ops, perm[lo:hi], vector.OutBatchRows, func(b exec.Batch) error { return out.Collect(ctx, b) })
}

// sorted releases the rows held and returns them as one record, with their
// change kinds (nil if all are inserts) and their order: perm lists the
// record's rows in key order.
func (o *sortOp) sorted() (arrow.RecordBatch, []exec.ChangeKind, []int32, error) {
	rec, err := concatBatches(o.mem, o.batches, o.rows)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sort: %w", err)
	}
	ops := batchOps(o.batches)
	// Release the inputs early: the sorted copy is all that is needed now.
	o.release()

	cmps := make([]func(i, j int32) int, len(o.cfg.Keys))
	for k, key := range o.cfg.Keys {
		if key.Col < 0 || key.Col >= int(rec.NumCols()) {
			rec.Release()
			return nil, nil, nil, fmt.Errorf("sort: key column %d out of range (%d columns)", key.Col, rec.NumCols())
		}
		c, err := sortComparator(rec.Column(key.Col), key)
		if err != nil {
			rec.Release()
			return nil, nil, nil, err
		}
		cmps[k] = c
	}
	perm := make([]int32, rec.NumRows())
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortStableFunc(perm, func(a, b int32) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	})
	return rec, ops, perm, nil
}

// emitPerm hands take the rows perm of rec (with change kinds ops), in that
// order, in batches of at most size rows; take borrows them.
func (o *sortOp) emitPerm(rec arrow.RecordBatch, ops []exec.ChangeKind, perm []int32, size int, take func(exec.Batch) error) error {
	for len(perm) > 0 {
		k := min(len(perm), size)
		chunk := perm[:k]
		perm = perm[k:]
		var part arrow.RecordBatch
		var err error
		if isIdentityRun(chunk) {
			part = rec.NewSlice(int64(chunk[0]), int64(chunk[0])+int64(k))
		} else if part, err = vector.GatherRecord(o.mem, rec, chunk); err != nil {
			return fmt.Errorf("sort: %w", err)
		}
		err = take(exec.Batch{Rec: part, Ops: vector.GatherOps(ops, chunk)})
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// isIdentityRun reports whether idx is consecutive rows (input already sorted).
func isIdentityRun(idx []int32) bool {
	for j := 1; j < len(idx); j++ {
		if idx[j] != idx[j-1]+1 {
			return false
		}
	}
	return true
}

// concat returns all retained rows as one record.
// concatBatches returns the rows of batches (rows in all) as one record;
// a single batch is retained, not copied.
func concatBatches(mem memory.Allocator, batches []exec.Batch, rows int) (arrow.RecordBatch, error) {
	if len(batches) == 1 {
		r := batches[0].Rec
		r.Retain()
		return r, nil
	}
	first := batches[0].Rec
	ncols := int(first.NumCols())
	cols := make([]arrow.Array, 0, ncols)
	parts := make([]arrow.Array, len(batches))
	for c := range ncols {
		for i, b := range batches {
			if int(b.Rec.NumCols()) != ncols {
				vector.ReleaseArrays(cols)
				return nil, fmt.Errorf("batches of %d and %d columns", ncols, b.Rec.NumCols())
			}
			parts[i] = b.Rec.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			vector.ReleaseArrays(cols)
			return nil, err
		}
		cols = append(cols, a)
	}
	return vector.MakeRecord(first.Schema(), cols, rows)
}

// batchOps returns the change kinds of batches' rows, in order; nil when
// every row is an insert.
func batchOps(batches []exec.Batch) []exec.ChangeKind {
	var ops []exec.ChangeKind
	for j, b := range batches {
		if b.Ops == nil {
			continue
		}
		if ops == nil {
			for _, prev := range batches[:j] {
				for range prev.NumRows() {
					ops = append(ops, exec.Insert)
				}
			}
		}
		ops = append(ops, b.Ops...)
	}
	return ops
}

// sortComparator returns the order of rows i and j of arr under key.
func sortComparator(arr arrow.Array, key SortKeySpec) (func(i, j int32) int, error) {
	var base func(i, j int32) int
	switch a := arr.(type) {
	case *array.Null:
		base = func(i, j int32) int { return 0 }
	case *array.Int64:
		v := a.Int64Values()
		base = func(i, j int32) int { return cmp.Compare(v[i], v[j]) }
	case *array.Timestamp:
		v := a.TimestampValues()
		base = func(i, j int32) int { return cmp.Compare(v[i], v[j]) }
	case *array.Float64:
		v := a.Float64Values()
		base = func(i, j int32) int {
			// cmp.Compare orders NaN first; PostgreSQL orders it last.
			x, y := v[i], v[j]
			switch {
			case x != x && y != y:
				return 0
			case x != x:
				return 1
			case y != y:
				return -1
			}
			return cmp.Compare(x, y)
		}
	case *array.Decimal128:
		v := a.Values()
		base = func(i, j int32) int { return v[i].Cmp(v[j]) }
	case *array.Boolean:
		base = func(i, j int32) int {
			x, y := a.Value(int(i)), a.Value(int(j))
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	case *array.String:
		offs := a.ValueOffsets()
		var data []byte
		if b := a.Data().Buffers()[2]; b != nil {
			data = b.Bytes()
		}
		base = func(i, j int32) int {
			return bytes.Compare(data[offs[i]:offs[i+1]], data[offs[j]:offs[j+1]])
		}
	default:
		return nil, fmt.Errorf("sort: cannot order %s", arr.DataType())
	}
	valid, voff := vector.ValidityOf(arr)
	if key.Desc {
		asc := base
		base = func(i, j int32) int { return asc(j, i) }
	}
	if valid == nil {
		return base, nil
	}
	nullCmp := 1
	if key.NullsFirst {
		nullCmp = -1
	}
	return func(i, j int32) int {
		ni := !bitutil.BitIsSet(valid, voff+int(i))
		nj := !bitutil.BitIsSet(valid, voff+int(j))
		switch {
		case ni && nj:
			return 0
		case ni:
			return nullCmp
		case nj:
			return -nullCmp
		}
		return base(i, j)
	}, nil
}

func (o *sortOp) release() {
	for _, b := range o.batches {
		b.Rec.Release()
	}
	o.batches = nil
	o.rows, o.bytes = 0, 0
}

func (o *sortOp) Close(ctx context.Context) error {
	o.release()
	if o.spill != nil {
		o.spill.remove()
		o.spill = nil
	}
	return nil
}

package operators

// External sort, for a sort whose rows outgrow its budget: it writes what it
// holds as a sorted run to a spill file (spill.go) and starts afresh; at end
// of stream the rest is a run too, and the runs are merged. The merge compares
// rows of different runs by their normalised keys (sortkey.go) and breaks ties
// by run, in the order the runs were written, so the whole sort stays stable.
// It holds one batch of each run at a time, which is why runs are written in
// small batches (runBatchRows).

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// runBatchRows is the most rows of a batch of a run: a merge of many runs
// holds one batch of each.
const runBatchRows = 4096

// sortSpill is a sort's runs on disk.
type sortSpill struct {
	dir  string
	runs []*spillFile
}

// spillRun writes the rows held, sorted (the first keep() of them), as a run
// and releases them.
func (o *sortOp) spillRun() error {
	if o.rows == 0 {
		return nil
	}
	if o.spill == nil {
		dir, err := os.MkdirTemp(spillDir(o.tc), "hummer-sort-")
		if err != nil {
			return fmt.Errorf("sort: spilling to disk: %w", err)
		}
		o.spill = &sortSpill{dir: dir}
	}
	schema := o.batches[0].Rec.Schema()
	rec, ops, perm, err := o.sorted()
	if err != nil {
		return err
	}
	defer rec.Release()
	if k := o.keep(); k >= 0 {
		perm = perm[:min(int64(len(perm)), k)]
	}
	f, err := newSpillFile("sort", o.spill.dir, fmt.Sprintf("run%04d-*.arrows", len(o.spill.runs)), schema, o.mem)
	if err != nil {
		return err
	}
	o.spill.runs = append(o.spill.runs, f)
	if err := o.emitPerm(rec, ops, perm, runBatchRows, func(b exec.Batch) error { return f.write(o.mem, b.Rec, b.Ops) }); err != nil {
		return err
	}
	return f.finish()
}

// remove deletes the runs and their directory.
func (sp *sortSpill) remove() {
	for _, f := range sp.runs {
		f.close()
	}
	os.RemoveAll(sp.dir)
}

// mergeRun is one run being merged: its current batch and that batch's keys.
type mergeRun struct {
	r    *spillReader
	cur  exec.Batch // Rec nil before the first batch and after the last
	keys sortKeys
	pos  int // the next row of cur
}

// advance moves to the run's next batch; false at the end.
func (m *mergeRun) advance(specs []SortKeySpec) (bool, error) {
	if m.cur.Rec != nil {
		m.cur.Rec.Release()
		m.cur = exec.Batch{}
	}
	for {
		b, ok, err := m.r.next()
		if err != nil || !ok {
			return false, err
		}
		if b.NumRows() == 0 {
			b.Rec.Release()
			continue
		}
		m.cur, m.pos = b, 0
		return true, m.keys.encode(b.Rec, specs)
	}
}

// mergeHeap orders the runs by the key of their next row, then by run.
type mergeHeap struct {
	runs  []*mergeRun
	items []int
}

func (h *mergeHeap) Len() int { return len(h.items) }
func (h *mergeHeap) Less(a, b int) bool {
	ra, rb := h.runs[h.items[a]], h.runs[h.items[b]]
	if c := bytes.Compare(ra.keys.key(ra.pos), rb.keys.key(rb.pos)); c != 0 {
		return c < 0
	}
	return h.items[a] < h.items[b]
}
func (h *mergeHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *mergeHeap) Push(x any)    { h.items = append(h.items, x.(int)) }
func (h *mergeHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// merge emits rows Offset..Offset+Limit of the merged runs.
func (sp *sortSpill) merge(ctx context.Context, o *sortOp, out exec.Collector) error {
	h := &mergeHeap{runs: make([]*mergeRun, len(sp.runs))}
	defer func() {
		for _, m := range h.runs {
			if m != nil {
				if m.cur.Rec != nil {
					m.cur.Rec.Release()
				}
				m.r.close()
			}
		}
	}()
	for i, f := range sp.runs {
		r, err := f.reader(o.mem)
		if err != nil {
			return err
		}
		h.runs[i] = &mergeRun{r: r}
		ok, err := h.runs[i].advance(o.cfg.Keys)
		if err != nil {
			return err
		}
		if ok {
			h.items = append(h.items, i)
		}
	}
	heap.Init(h)
	lo, hi := o.cfg.Offset, o.keep()
	var picks []mergePick
	flush := func() error {
		if len(picks) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		b, err := o.gatherPicks(h.runs, picks)
		picks = picks[:0]
		if err != nil {
			return err
		}
		err = out.Collect(ctx, b)
		b.Rec.Release()
		return err
	}
	for pos := int64(0); h.Len() > 0 && (hi < 0 || pos < hi); pos++ {
		i := h.items[0]
		m := h.runs[i]
		if pos >= lo {
			picks = append(picks, mergePick{run: i, row: m.pos})
		}
		m.pos++
		if len(picks) == vector.OutBatchRows {
			if err := flush(); err != nil {
				return err
			}
		}
		if m.pos < m.cur.NumRows() {
			heap.Fix(h, 0)
			continue
		}
		// The picks borrow the run's batch: they go before it does.
		if err := flush(); err != nil {
			return err
		}
		ok, err := m.advance(o.cfg.Keys)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return flush()
}

// mergePick is one output row of a merge: row of run's current batch.
type mergePick struct{ run, row int }

// gatherPicks builds the batch of the picked rows, in order. Each run's picks
// are consecutive rows of its current batch, so each is one slice; the slices
// are concatenated and the rows interleaved by one gather.
func (o *sortOp) gatherPicks(runs []*mergeRun, picks []mergePick) (exec.Batch, error) {
	first := map[int]int{} // run -> its first picked row
	var order []int        // the runs, by first pick
	for _, p := range picks {
		if _, ok := first[p.run]; !ok {
			first[p.run] = p.row
			order = append(order, p.run)
		}
	}
	count := map[int]int{}
	for _, p := range picks {
		count[p.run]++
	}
	if len(order) == 1 {
		r := runs[order[0]]
		lo := first[order[0]]
		n := len(picks)
		b := exec.Batch{Rec: r.cur.Rec.NewSlice(int64(lo), int64(lo+n))}
		if r.cur.Ops != nil {
			b.Ops = r.cur.Ops[lo : lo+n]
		}
		return b, nil
	}
	base := map[int]int{}
	slices := make([]arrow.RecordBatch, 0, len(order))
	defer func() {
		for _, s := range slices {
			s.Release()
		}
	}()
	var ops []exec.ChangeKind
	anyOps := false
	total := 0
	for _, run := range order {
		r := runs[run]
		base[run] = total
		lo, n := first[run], count[run]
		slices = append(slices, r.cur.Rec.NewSlice(int64(lo), int64(lo+n)))
		anyOps = anyOps || r.cur.Ops != nil
		total += n
	}
	if anyOps {
		ops = make([]exec.ChangeKind, 0, total)
		for _, run := range order {
			r := runs[run]
			for i := range count[run] {
				ops = append(ops, r.cur.Op(first[run]+i))
			}
		}
	}
	ncols := int(slices[0].NumCols())
	cols := make([]arrow.Array, 0, ncols)
	parts := make([]arrow.Array, len(slices))
	for c := range ncols {
		for i, s := range slices {
			parts[i] = s.Column(c)
		}
		a, err := array.Concatenate(parts, o.mem)
		if err != nil {
			vector.ReleaseArrays(cols)
			return exec.Batch{}, fmt.Errorf("sort: %w", err)
		}
		cols = append(cols, a)
	}
	all, err := vector.MakeRecord(slices[0].Schema(), cols, total)
	if err != nil {
		return exec.Batch{}, fmt.Errorf("sort: %w", err)
	}
	defer all.Release()
	idx := make([]int32, len(picks))
	for j, p := range picks {
		idx[j] = int32(base[p.run] + p.row - first[p.run])
	}
	rec, err := vector.GatherRecord(o.mem, all, idx)
	if err != nil {
		return exec.Batch{}, fmt.Errorf("sort: %w", err)
	}
	return exec.Batch{Rec: rec, Ops: vector.GatherOps(ops, idx)}, nil
}

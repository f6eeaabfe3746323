package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// windowOp is kind "window" (WindowConfig): it holds its input until end of
// stream (it reuses sortOp for that), orders it by partition then order keys
// (stable), and computes each function a partition at a time over the sorted
// rows: ranks from the peer groups (rows equal on the order keys), lag, lead
// and the frame functions from row indexes it then gathers, counts, sums and
// averages from running or prefix sums, min and max by comparing rows. Rows go
// out in that order, with the functions' columns after the input's.
type windowOp struct {
	cfg  WindowConfig
	sort *sortOp
	out  *arrow.Schema
	mem  memory.Allocator
}

var _ exec.Operator = (*windowOp)(nil)

func newWindowOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg WindowConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("window: bad config: %w", err)
	}
	keys := make([]SortKeySpec, 0, len(cfg.Partition)+len(cfg.Order))
	for _, c := range cfg.Partition {
		keys = append(keys, SortKeySpec{Col: c})
	}
	keys = append(keys, cfg.Order...)
	return &windowOp{cfg: cfg, sort: &sortOp{cfg: SortConfig{Keys: keys, Limit: -1, MemoryLimit: -1}}, out: spec.Out.Arrow()}, nil
}

func (o *windowOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return o.sort.Open(ctx, tc)
}

func (o *windowOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	for _, op := range b.Ops {
		if op != exec.Insert {
			return fmt.Errorf("window: %s rows are not supported: window functions need a bounded input", op)
		}
	}
	return o.sort.ProcessBatch(ctx, input, b, out)
}

func (o *windowOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if s.Kind != exec.EndOfStream {
		return out.CollectSignal(ctx, s)
	}
	if o.sort.done {
		return nil
	}
	o.sort.done = true
	if o.sort.rows > 0 {
		if err := o.emit(ctx, out); err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

func (o *windowOp) Close(ctx context.Context) error { return o.sort.Close(ctx) }

// emit computes the functions over the sorted rows and sends them.
func (o *windowOp) emit(ctx context.Context, out exec.Collector) error {
	rec, _, perm, err := o.sort.sorted()
	if err != nil {
		return err
	}
	defer rec.Release()
	n := len(perm)
	partCmp, err := comparators(rec, o.sort.cfg.Keys[:len(o.cfg.Partition)])
	if err != nil {
		return err
	}
	orderCmp, err := comparators(rec, o.cfg.Order)
	if err != nil {
		return err
	}
	same := func(cmps []func(i, j int32) int, a, b int32) bool {
		for _, c := range cmps {
			if c(a, b) != 0 {
				return false
			}
		}
		return true
	}
	// Partition and peer boundaries, by position in perm.
	partStart := make([]int, n) // first position of the row's partition
	partEnd := make([]int, n)   // past its last
	peerStart := make([]int, n)
	peerEnd := make([]int, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && same(partCmp, perm[i], perm[j]) {
			j++
		}
		for k := i; k < j; {
			l := k + 1
			for l < j && same(orderCmp, perm[k], perm[l]) {
				l++
			}
			for m := k; m < l; m++ {
				partStart[m], partEnd[m], peerStart[m], peerEnd[m] = i, j, k, l
			}
			k = l
		}
		i = j
	}
	w := &windowRun{o: o, rec: rec, perm: perm, partStart: partStart, partEnd: partEnd, peerStart: peerStart, peerEnd: peerEnd}
	results := make([]arrow.Array, 0, len(o.cfg.Funcs))
	defer func() { vector.ReleaseArrays(results) }()
	for _, f := range o.cfg.Funcs {
		a, err := w.compute(f)
		if err != nil {
			return fmt.Errorf("window: %s: %w", f.Func, err)
		}
		results = append(results, a)
	}
	// The input's rows in perm's order, then the functions' columns.
	for lo := 0; lo < n; lo += vector.OutBatchRows {
		hi := min(n, lo+vector.OutBatchRows)
		part, err := vector.GatherRecord(o.mem, rec, perm[lo:hi])
		if err != nil {
			return fmt.Errorf("window: %w", err)
		}
		cols := append([]arrow.Array{}, part.Columns()...)
		for _, c := range cols {
			c.Retain()
		}
		part.Release()
		for _, r := range results {
			cols = append(cols, array.NewSlice(r, int64(lo), int64(hi)))
		}
		b, err := vector.MakeRecord(o.out, cols, hi-lo)
		if err != nil {
			return fmt.Errorf("window: %w", err)
		}
		err = out.Collect(ctx, exec.Batch{Rec: b})
		b.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// comparators returns the row order of rec under keys.
func comparators(rec arrow.RecordBatch, keys []SortKeySpec) ([]func(i, j int32) int, error) {
	cmps := make([]func(i, j int32) int, len(keys))
	for k, key := range keys {
		if key.Col < 0 || key.Col >= int(rec.NumCols()) {
			return nil, fmt.Errorf("window: key column %d out of range (%d columns)", key.Col, rec.NumCols())
		}
		c, err := sortComparator(rec.Column(key.Col), key)
		if err != nil {
			return nil, err
		}
		cmps[k] = c
	}
	return cmps, nil
}

// windowRun is one computation over the sorted rows: position p in perm is
// row perm[p] of rec.
type windowRun struct {
	o                  *windowOp
	rec                arrow.RecordBatch
	perm               []int32
	partStart, partEnd []int
	peerStart, peerEnd []int
	ranges             map[WindowFrame]*rangeFrame // prepareRange
}

// frame returns the positions [lo, hi) of the frame of position p.
func (w *windowRun) frame(f WindowFrame, p int) (int, int) {
	ps, pe := w.partStart[p], w.partEnd[p]
	if !f.Rows {
		lo, hi := w.peerStart[p], w.peerEnd[p]
		switch {
		case f.StartUnbounded:
			lo = ps
		case f.StartOffset:
			r := w.ranges[f]
			lo = r.bound(w, r.start, p, ps, pe, false)
		}
		switch {
		case f.EndUnbounded:
			hi = pe
		case f.EndOffset:
			r := w.ranges[f]
			hi = r.bound(w, r.end, p, ps, pe, true)
		}
		return lo, max(lo, hi)
	}
	lo, hi := ps, pe
	if !f.StartUnbounded {
		lo = max(ps, min(pe, p+int(f.Start)))
	}
	if !f.EndUnbounded {
		hi = min(pe, max(ps, p+int(f.End)+1))
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// compute returns function f's column, in perm's order.
func (w *windowRun) compute(f WindowFuncSpec) (arrow.Array, error) {
	if err := w.prepareRange(f.Frame); err != nil {
		return nil, err
	}
	n := len(w.perm)
	mem := w.o.mem
	switch f.Func {
	case "row_number", "rank", "dense_rank", "ntile":
		vals := make([]int64, n)
		dense := int64(0)
		for p := 0; p < n; p++ {
			ps, pe := w.partStart[p], w.partEnd[p]
			if p == ps {
				dense = 0
			}
			if p == w.peerStart[p] {
				dense++
			}
			switch f.Func {
			case "row_number":
				vals[p] = int64(p - ps + 1)
			case "rank":
				vals[p] = int64(w.peerStart[p] - ps + 1)
			case "dense_rank":
				vals[p] = dense
			case "ntile":
				if f.N <= 0 {
					return nil, fmt.Errorf("argument of ntile must be greater than zero")
				}
				vals[p] = ntile(int64(p-ps), int64(pe-ps), f.N)
			}
		}
		return int64Column(mem, vals), nil
	case "percent_rank", "cume_dist":
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		for p := 0; p < n; p++ {
			ps, pe := w.partStart[p], w.partEnd[p]
			size := float64(pe - ps)
			if f.Func == "percent_rank" {
				if size <= 1 {
					b.Append(0)
				} else {
					b.Append(float64(w.peerStart[p]-ps) / (size - 1))
				}
			} else {
				b.Append(float64(w.peerEnd[p]-ps) / size)
			}
		}
		return b.NewArray(), nil
	case "lag", "lead", "first_value", "last_value", "nth_value":
		return w.valueAt(f)
	case "count":
		return w.count(f)
	case "sum", "avg":
		return w.sum(f)
	case "min", "max":
		return w.minMax(f)
	}
	return nil, fmt.Errorf("unknown window function")
}

// ntile is the bucket (1-based) of row i of a partition of size rows split
// into k buckets, the first size % k one row larger, as PostgreSQL's.
func ntile(i, size, k int64) int64 {
	if k > size {
		return i + 1
	}
	per, extra := size/k, size%k
	big := extra * (per + 1)
	if i < big {
		return i/(per+1) + 1
	}
	return extra + (i-big)/per + 1
}

// valueAt computes lag, lead and the frame's first, last and n-th values by
// gathering rows.
func (w *windowRun) valueAt(f WindowFuncSpec) (arrow.Array, error) {
	n := len(w.perm)
	if len(f.Args) == 0 {
		return nil, fmt.Errorf("needs an argument")
	}
	arg := w.rec.Column(f.Args[0])
	src := arg
	useDefault := (f.Func == "lag" || f.Func == "lead") && f.Default >= 0
	if useDefault {
		// The default is the current row's, read from past the column.
		c, err := array.Concatenate([]arrow.Array{arg, w.rec.Column(f.Default)}, w.o.mem)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		src = c
	}
	idx := make([]int32, n)
	for p := 0; p < n; p++ {
		q := -1
		switch f.Func {
		case "lag", "lead":
			off := int(f.N)
			if f.Func == "lag" {
				off = -off
			}
			if t := p + off; t >= w.partStart[p] && t < w.partEnd[p] {
				q = t
			}
		default:
			lo, hi := w.frame(f.Frame, p)
			switch {
			case lo >= hi:
			case f.Func == "first_value":
				q = lo
			case f.Func == "last_value":
				q = hi - 1
			case f.N >= 1 && lo+int(f.N)-1 < hi:
				q = lo + int(f.N) - 1
			}
		}
		switch {
		case q >= 0:
			idx[p] = w.perm[q]
		case useDefault:
			idx[p] = int32(arg.Len()) + w.perm[p]
		default:
			idx[p] = -1
		}
	}
	return vector.GatherArray(w.o.mem, src, idx)
}

// count computes count(*) and count(x) over the frames, from prefix counts.
func (w *windowRun) count(f WindowFuncSpec) (arrow.Array, error) {
	n := len(w.perm)
	prefix := make([]int64, n+1)
	var valid []byte
	var voff int
	if len(f.Args) > 0 {
		valid, voff = vector.ValidityOf(w.rec.Column(f.Args[0]))
	}
	for p := 0; p < n; p++ {
		c := int64(1)
		if valid != nil && !bitutil.BitIsSet(valid, voff+int(w.perm[p])) {
			c = 0
		}
		prefix[p+1] = prefix[p] + c
	}
	vals := make([]int64, n)
	for p := 0; p < n; p++ {
		lo, hi := w.frame(f.Frame, p)
		vals[p] = prefix[hi] - prefix[lo]
	}
	return int64Column(w.o.mem, vals), nil
}

// sum computes sum and avg over the frames: exact prefix sums for bigint and
// decimal arguments; for double ones the frame's values added in order, as a
// running sum while frames only grow.
func (w *windowRun) sum(f WindowFuncSpec) (arrow.Array, error) {
	n := len(w.perm)
	if len(f.Args) == 0 {
		return nil, fmt.Errorf("needs an argument")
	}
	arg := w.rec.Column(f.Args[0])
	valid, voff := vector.ValidityOf(arg)
	isValid := func(r int32) bool { return valid == nil || bitutil.BitIsSet(valid, voff+int(r)) }
	counts := make([]int64, n+1)
	for p := 0; p < n; p++ {
		counts[p+1] = counts[p]
		if isValid(w.perm[p]) {
			counts[p+1]++
		}
	}
	if a, ok := arg.(*array.Float64); ok {
		v := a.Float64Values()
		b := array.NewFloat64Builder(w.o.mem)
		defer b.Release()
		for p := 0; p < n; p++ {
			lo, hi := w.frame(f.Frame, p)
			if counts[hi]-counts[lo] == 0 {
				b.AppendNull()
				continue
			}
			s := 0.0
			for q := lo; q < hi; q++ {
				if r := w.perm[q]; isValid(r) {
					s += v[r]
				}
			}
			if f.Func == "avg" {
				s /= float64(counts[hi] - counts[lo])
			}
			b.Append(s)
		}
		return b.NewArray(), nil
	}
	// Exact: bigint and decimal arguments, as decimal128 at the argument's
	// scale.
	inScale := int32(0)
	get := func(r int32) decimal128.Num { return decimal128.FromI64(0) }
	switch a := arg.(type) {
	case *array.Int64:
		v := a.Int64Values()
		get = func(r int32) decimal128.Num { return decimal128.FromI64(v[r]) }
	case *array.Decimal128:
		v := a.Values()
		inScale = a.DataType().(*arrow.Decimal128Type).Scale
		get = func(r int32) decimal128.Num { return v[r] }
	default:
		return nil, fmt.Errorf("cannot sum %s", arg.DataType())
	}
	prefix := make([]decimal128.Num, n+1)
	for p := 0; p < n; p++ {
		prefix[p+1] = prefix[p]
		if r := w.perm[p]; isValid(r) {
			prefix[p+1] = prefix[p+1].Add(get(r))
		}
	}
	dt, ok := f.Type.Arrow().(*arrow.Decimal128Type)
	if !ok {
		return nil, fmt.Errorf("result type %s", f.Type)
	}
	b := array.NewDecimal128Builder(w.o.mem, dt)
	defer b.Release()
	for p := 0; p < n; p++ {
		lo, hi := w.frame(f.Frame, p)
		cnt := counts[hi] - counts[lo]
		if cnt == 0 {
			b.AppendNull()
			continue
		}
		div := int64(1)
		if f.Func == "avg" {
			div = cnt
		}
		v, err := divRound(prefix[hi].Sub(prefix[lo]), inScale, div, dt.Scale)
		if err != nil {
			return nil, err
		}
		b.Append(v)
	}
	return b.NewArray(), nil
}

// minMax computes min and max over the frames by comparing rows, gathering
// the one found.
func (w *windowRun) minMax(f WindowFuncSpec) (arrow.Array, error) {
	n := len(w.perm)
	if len(f.Args) == 0 {
		return nil, fmt.Errorf("needs an argument")
	}
	arg := w.rec.Column(f.Args[0])
	cmp, err := sortComparator(arg, SortKeySpec{Col: f.Args[0]})
	if err != nil {
		return nil, err
	}
	valid, voff := vector.ValidityOf(arg)
	isValid := func(r int32) bool { return valid == nil || bitutil.BitIsSet(valid, voff+int(r)) }
	better := func(a, b int32) bool {
		c := cmp(a, b)
		if f.Func == "max" {
			return c > 0
		}
		return c < 0
	}
	idx := make([]int32, n)
	for p := 0; p < n; p++ {
		lo, hi := w.frame(f.Frame, p)
		best := int32(-1)
		for q := lo; q < hi; q++ {
			if r := w.perm[q]; isValid(r) && (best < 0 || better(r, best)) {
				best = r
			}
		}
		idx[p] = best
	}
	return vector.GatherArray(w.o.mem, arg, idx)
}

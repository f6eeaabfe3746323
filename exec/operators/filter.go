package operators

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	mathbits "math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// filterOp is kind "filter" (see FilterConfig): it keeps the rows where Cond is
// true (NULL counts as false) with their change kinds. A batch whose rows all
// pass is forwarded as is; one whose kept rows are contiguous is forwarded as a
// zero-copy slice; otherwise the kept rows are gathered by a selection vector.
// An empty result emits nothing.
//
// A condition of several conjuncts (an AND) is evaluated one conjunct after
// another, each over the rows the ones before kept: once at most half the
// rows are left, they are gathered (only the columns the later conjuncts
// read) and the later conjuncts evaluate over them alone. TPC-H q19's
// lineitem filter, two cheap conjuncts keeping 4% of the rows before an OR of
// decimal ranges, evaluated that OR over every row. A lower and an upper
// bound of one expression (l_shipdate >= DATE '1994-01-01' AND l_shipdate <
// DATE '1995-01-01') are one conjunct, a single pass over its values
// (expr.MatchRange). Comparisons of columns with constants go first, then
// comparisons of two columns, then the rest in written order (conjunctRank).
// Selectors (expr.Selector: a bigint, date, timestamp or decimal column
// within constants, two such columns compared, a text column equal to one of
// a few literals; a condition that is one such too) go first of all and make
// a selection vector directly, each reading its columns only at the rows the
// ones before kept: TPC-H q6's filter, three bounds, had gathered two
// decimal columns at 15% of the rows and one at 4% for them.
type filterOp struct {
	cond  *expr.Expr
	conjs []conjunct
	// cols are the input columns emitted (FilterConfig.Keep; nil: all), of
	// schema colSchema, made at the first batch.
	cols      []int
	colSchema *arrow.Schema
	// later[i] marks the columns conjuncts i.. read (narrowed records keep
	// only those); narrow[i] is the schema of such a record (NULL columns
	// for the others), made at the first batch.
	later  [][]bool
	narrow []*arrow.Schema
	mem    memory.Allocator
	sel    []int32
	keep   []byte     // processConjuncts' bitmap of the rows kept
	pos    [2][]int32 // and its positions of narrowed rows
}

var _ exec.Operator = (*filterOp)(nil)

func newFilterOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg FilterConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("filter: bad config: %w", err)
	}
	if cfg.Cond == nil {
		return nil, fmt.Errorf("filter: no condition")
	}
	o := &filterOp{cond: cfg.Cond, cols: cfg.Keep}
	if cfg.Cond.Kind == expr.KindCall && cfg.Cond.Func == "and" && len(cfg.Cond.Args) > 1 {
		o.conjs = conjuncts(cfg.Cond.Args)
	} else if _, ok := expr.MatchSelector(cfg.Cond); ok {
		o.conjs = conjuncts([]*expr.Expr{cfg.Cond}) // one step, a selection vector
	}
	return o, nil
}

func (o *filterOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return nil
}

func (o *filterOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if o.conjs != nil {
		return o.processConjuncts(ctx, b, out)
	}
	res, err := expr.Eval(o.cond, b.Rec, o.mem)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	defer res.Release()
	if res.Len() != n {
		return fmt.Errorf("filter: condition gave %d values for %d rows", res.Len(), n)
	}
	cond, ok := res.(*array.Boolean)
	if !ok {
		if res.NullN() == n {
			return nil // WHERE NULL
		}
		return fmt.Errorf("filter: condition is %s, not boolean", res.DataType())
	}
	o.sel = trueRows(cond, o.sel[:0])
	return o.emit(ctx, b, o.sel, out)
}

// emit sends the rows sel (ascending) of b.
func (o *filterOp) emit(ctx context.Context, b exec.Batch, sel []int32, out exec.Collector) error {
	n, k := b.NumRows(), len(sel)
	switch {
	case k == 0:
		return nil
	case k == n:
		return o.emitAll(ctx, b, out)
	}
	if o.cols != nil {
		rec, err := o.project(b.Rec)
		if err != nil {
			return err
		}
		defer rec.Release()
		b.Rec = rec
	}
	switch {
	case int(sel[k-1]-sel[0]) == k-1:
		lo, hi := int64(sel[0]), int64(sel[k-1])+1
		s := exec.Batch{Rec: b.Rec.NewSlice(lo, hi)}
		defer s.Rec.Release()
		if b.Ops != nil {
			s.Ops = b.Ops[lo:hi]
		}
		return out.Collect(ctx, s)
	}
	rec, err := vector.GatherRecord(o.mem, b.Rec, sel)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	defer rec.Release()
	return out.Collect(ctx, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, sel)})
}

// emitAll sends every row of b: b itself, or its columns o.cols.
func (o *filterOp) emitAll(ctx context.Context, b exec.Batch, out exec.Collector) error {
	if o.cols == nil {
		return out.Collect(ctx, b)
	}
	rec, err := o.project(b.Rec)
	if err != nil {
		return err
	}
	defer rec.Release()
	b.Rec = rec
	return out.Collect(ctx, b)
}

// project returns the columns o.cols of rec, without copying them.
func (o *filterOp) project(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if o.colSchema == nil {
		fields := make([]arrow.Field, len(o.cols))
		for i, c := range o.cols {
			if c < 0 || c >= int(rec.NumCols()) {
				return nil, fmt.Errorf("filter: keeps column %d of %d", c, rec.NumCols())
			}
			fields[i] = rec.Schema().Field(c)
		}
		o.colSchema = arrow.NewSchema(fields, nil)
	}
	cols := make([]arrow.Array, len(o.cols))
	for i, c := range o.cols {
		cols[i] = rec.Column(c)
	}
	return array.NewRecordBatch(o.colSchema, cols, rec.NumRows()), nil
}

// trueRows appends to sel the rows where cond is true (not false, not NULL): a
// selection vector.
func trueRows(cond *array.Boolean, sel []int32) []int32 {
	d := cond.Data()
	if d.Buffers()[1] == nil {
		return sel
	}
	vals, off := d.Buffers()[1].Bytes(), d.Offset()
	valid, voff := vector.ValidityOf(cond)
	n := cond.Len()
	if off == 0 && (valid == nil || voff == 0) {
		// Sixty-four rows at a time: one AND of the value and validity words, then
		// only the set bits are visited.
		full := n / 64
		for w := 0; w < full; w++ {
			bits := binary.LittleEndian.Uint64(vals[w*8:])
			if valid != nil {
				bits &= binary.LittleEndian.Uint64(valid[w*8:])
			}
			for bits != 0 {
				sel = append(sel, int32(w*64+mathbits.TrailingZeros64(bits)))
				bits &= bits - 1
			}
		}
		for i := full * 64; i < n; i++ {
			if bitutil.BitIsSet(vals, i) && (valid == nil || bitutil.BitIsSet(valid, i)) {
				sel = append(sel, int32(i))
			}
		}
		return sel
	}
	for i := range n {
		if bitutil.BitIsSet(vals, off+i) && (valid == nil || bitutil.BitIsSet(valid, voff+i)) {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

func (o *filterOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *filterOp) Close(ctx context.Context) error { return nil }

// Gathering rows by index: the selection machinery of filter, shared with
// unnest (repeating columns), hash_join (pairing rows) and sort (permuting).

// processConjuncts filters b by the conjuncts one after another (filterOp).
// The selector conjuncts (expr.Selector), first, make a selection vector of
// the rows they keep, each reading its columns at the rows the ones before
// kept.
// After them the rows still kept are a bitmap over cur, ANDed with each
// conjunct's result a word at a time, until narrowing turns it into row
// positions.
func (o *filterOp) processConjuncts(ctx context.Context, b exec.Batch, out exec.Collector) error {
	if o.later == nil {
		o.prepareConjuncts(b.Rec.Schema())
	}
	n := b.NumRows()
	i := 0
	var sel []int32 // the rows the selectors kept (nil: no selectors)
	for ; i < len(o.conjs) && o.conjs[i].sel != nil; i++ {
		if i == 0 {
			o.sel = o.conjs[i].sel.SelectAll(b.Rec, o.sel[:0])
			sel = o.sel
		} else {
			sel = o.conjs[i].sel.Refine(b.Rec, sel)
		}
		if len(sel) == 0 {
			return nil
		}
	}
	if i == len(o.conjs) {
		return o.emit(ctx, b, sel, out)
	}
	cur := b.Rec    // the rows the next conjunct reads
	var pos []int32 // cur's rows' positions in b (nil: cur is b.Rec)
	var keep []byte // the rows of cur still kept (nil: all)
	narrowings := 0
	var narrowed arrow.RecordBatch
	defer func() {
		if narrowed != nil {
			narrowed.Release()
		}
	}()
	if sel != nil {
		if len(sel) <= n/2 {
			// The positions move to o.pos: the end reuses o.sel.
			pos = append(o.pos[0][:0], sel...)
			o.pos[0] = pos
			narrowings++
			rec, err := o.narrowTo(b.Rec, pos, i)
			if err != nil {
				return err
			}
			narrowed, cur = rec, rec
		} else {
			keep = o.keepBits(n)
			clear(keep)
			for _, r := range sel {
				bitutil.SetBit(keep, int(r))
			}
		}
	}
	for ; i < len(o.conjs); i++ {
		c := o.conjs[i]
		res, err := c.eval(cur, o.mem)
		if err != nil {
			return fmt.Errorf("filter: %w", err)
		}
		rows := int(cur.NumRows())
		cond, ok := res.(*array.Boolean)
		if !ok || res.Len() != rows {
			all := ok || res.NullN() == res.Len()
			res.Release()
			if all && res.NullN() == res.Len() {
				return nil // a conjunct that is NULL everywhere
			}
			return fmt.Errorf("filter: condition is %s of %d values for %d rows, not boolean", res.DataType(), res.Len(), cur.NumRows())
		}
		first := keep == nil
		if first {
			keep = o.keepBits(rows)
		}
		andTrue(keep, cond, first)
		res.Release()
		k := bitutil.CountSetBits(keep, 0, rows)
		if k == 0 {
			return nil
		}
		if i+1 < len(o.conjs) && k <= rows/2 {
			// The positions live in the scratch slices o.pos[0] and [1] by
			// turns: pos is the other one.
			abs := setRows(keep, rows, slices.Grow(o.pos[narrowings%2][:0], k))
			o.pos[narrowings%2] = abs
			narrowings++
			if pos != nil {
				for j, r := range abs {
					abs[j] = pos[r]
				}
			}
			rec, err := o.narrowTo(b.Rec, abs, i+1)
			if err != nil {
				return err
			}
			if narrowed != nil {
				narrowed.Release()
			}
			narrowed, cur, pos, keep = rec, rec, abs, nil
		}
	}
	sel = pos
	if keep != nil {
		o.sel = setRows(keep, int(cur.NumRows()), o.sel[:0])
		sel = o.sel
		if pos != nil {
			for j, r := range sel {
				sel[j] = pos[r]
			}
		}
	}
	if sel == nil || len(sel) == n {
		return o.emitAll(ctx, b, out)
	}
	return o.emit(ctx, b, sel, out)
}

// keepBits returns the filter's scratch bitmap of rows bits (its contents
// arbitrary).
func (o *filterOp) keepBits(rows int) []byte {
	nb := int(bitutil.BytesForBits(int64(rows)))
	if cap(o.keep) < nb {
		o.keep = make([]byte, nb)
	}
	return o.keep[:nb]
}

// andTrue sets keep (of cond's length in bits) to the rows where cond is true
// (not false, not NULL), or with and to those of them already set in keep.
func andTrue(keep []byte, cond *array.Boolean, first bool) {
	n := int64(cond.Len())
	if cond.Data().Buffers()[1] == nil { // no values: no row is true
		clear(keep)
		return
	}
	vals, off := cond.Data().Buffers()[1].Bytes(), int64(cond.Data().Offset())
	if first {
		bitutil.CopyBitmap(vals, int(off), int(n), keep, 0)
	} else {
		bitutil.BitmapAnd(keep, vals, 0, off, keep, 0, n)
	}
	if valid, voff := vector.ValidityOf(cond); valid != nil {
		bitutil.BitmapAnd(keep, valid, 0, int64(voff), keep, 0, n)
	}
}

// setRows appends to sel the rows whose bit is set among the first n of bits:
// sixty-four rows to a word, visiting only the set bits.
func setRows(bits []byte, n int, sel []int32) []int32 {
	full := n / 64
	for w := 0; w < full; w++ {
		word := binary.LittleEndian.Uint64(bits[w*8:])
		for word != 0 {
			sel = append(sel, int32(w*64+mathbits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	for i := full * 64; i < n; i++ {
		if bitutil.BitIsSet(bits, i) {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

// conjunct is one step of processConjuncts: a conjunct of the condition, or
// two that bound one expression from below and above (rng), evaluated in one
// pass over it. sel is set when the step is a selector (expr.MatchSelector):
// it is then evaluated into a selection vector.
type conjunct struct {
	cond *expr.Expr // for a range, the AND of its two
	rng  *expr.Range
	sel  expr.Selector
}

// conjuncts pairs each lower bound among conds with the first upper bound of
// the same expression after it (expr.MatchRange), in the place of the first.
func conjuncts(conds []*expr.Expr) []conjunct {
	var out []conjunct
	paired := make([]bool, len(conds))
	for i, c := range conds {
		if paired[i] {
			continue
		}
		step := conjunct{cond: c}
		for j := i + 1; j < len(conds); j++ {
			if r, ok := expr.MatchRange(c, conds[j]); ok && !paired[j] {
				step = conjunct{cond: expr.Call("and", c.Type, c, conds[j]), rng: r}
				paired[j] = true
				break
			}
		}
		if s, ok := expr.MatchSelector(step.cond); ok {
			step.sel = s
		}
		out = append(out, step)
	}
	// Comparisons of plain columns and constants of fixed-width types cannot
	// fail and are cheap: they go first, with a column against constants
	// (usually the most selective: a range of dates) before two columns, so
	// that the others (TPC-H q12's l_shipmode IN ('RAIL', 'FOB'), over
	// strings) see fewer rows. Selectors go before all others, in that order
	// too: they read no gathered rows. Whatever the order a row
	// passes when every conjunct is true; a conjunct moved earlier fails on
	// no row, so none fails that would not have.
	slices.SortStableFunc(out, func(a, b conjunct) int { return a.rank() - b.rank() })
	return out
}

// rank orders the steps: selectors, then the others, each by conjunctRank.
func (c conjunct) rank() int {
	if c.sel != nil {
		return conjunctRank(c.cond) - 3
	}
	return conjunctRank(c.cond)
}

// conjunctRank orders conjuncts for evaluation: 0 for comparisons (or ANDs of
// them) of fixed-width columns with constants, 1 when some compares two such
// columns, 2 for anything else.
func conjunctRank(c *expr.Expr) int {
	if c.Kind != expr.KindCall {
		return 2
	}
	if c.Func == "and" {
		r := 0
		for _, a := range c.Args {
			r = max(r, conjunctRank(a))
		}
		return r
	}
	switch c.Func {
	case "=", "<>", "<", "<=", ">", ">=":
	default:
		return 2
	}
	if len(c.Args) != 2 || c.Args[0].Type != c.Args[1].Type {
		return 2
	}
	switch c.Args[0].Type.ID {
	case types.Int64, types.Date, types.Timestamp, types.Decimal, types.Float64, types.Bool:
	default:
		return 2
	}
	columns := 0
	for _, a := range c.Args {
		switch a.Kind {
		case expr.KindColumn:
			columns++
		case expr.KindLiteral:
		default:
			return 2
		}
	}
	if columns == 2 {
		return 1
	}
	return 0
}

func (c conjunct) eval(rec arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	if c.rng != nil {
		return c.rng.Eval(rec, mem)
	}
	return expr.Eval(c.cond, rec, mem)
}

// prepareConjuncts works out, for each conjunct, the columns it and the ones
// after it read, and the schema of a record holding only those. Selectors
// that cannot read the batch's columns (not of the Arrow types their
// expression's types stand for) are evaluated as expressions (which then
// fail as they should).
func (o *filterOp) prepareConjuncts(schema *arrow.Schema) {
	nc := schema.NumFields()
	for i, c := range o.conjs {
		if c.sel != nil && !c.sel.Reads(schema) {
			o.conjs[i].sel = nil
		}
	}
	// The selectors stay first: others may only move after them.
	slices.SortStableFunc(o.conjs, func(a, b conjunct) int { return a.rank() - b.rank() })
	o.later = make([][]bool, len(o.conjs))
	o.narrow = make([]*arrow.Schema, len(o.conjs))
	need := make([]bool, nc)
	for i := len(o.conjs) - 1; i >= 0; i-- {
		for _, c := range o.conjs[i].cond.Columns(nil) {
			if c >= 0 && c < nc {
				need[c] = true
			}
		}
		o.later[i] = append([]bool(nil), need...)
		fields := make([]arrow.Field, nc)
		for c, f := range schema.Fields() {
			fields[c] = f
			if !need[c] {
				fields[c] = arrow.Field{Name: f.Name, Type: arrow.Null, Nullable: true}
			}
		}
		o.narrow[i] = arrow.NewSchema(fields, nil)
	}
}

// narrowTo gathers the rows abs of rec, only the columns conjuncts i.. read
// (the others NULL columns without buffers).
func (o *filterOp) narrowTo(rec arrow.RecordBatch, abs []int32, i int) (arrow.RecordBatch, error) {
	k := len(abs)
	cols := make([]arrow.Array, rec.NumCols())
	for c := range cols {
		if !o.later[i][c] {
			cols[c] = array.NewNull(k)
			continue
		}
		g, err := vector.GatherColumns(o.mem, nil, rec.Columns()[c:c+1], abs)
		if err != nil {
			vector.ReleaseArrays(cols)
			return nil, fmt.Errorf("filter: %w", err)
		}
		cols[c] = g[0]
	}
	out, err := vector.MakeRecord(o.narrow[i], cols, k)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return out, nil
}

package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// hashJoinOp is kind "hash_join" (see JoinConfig), inner, left, right or full, or
// one of the semi and anti joins of join_semi.go, for bounded inputs. Input 1 (right) is the build side: its batches are retained until its
// end of stream, then concatenated and indexed by a state.KeyTable with a
// chain of rows per key. Input 0 (left) probes: batches that arrive before the
// build side is complete are retained and probed once it is. Matching pairs are
// gathered into output batches of at most vector.OutBatchRows rows; Extra, when set,
// is evaluated on those candidate rows (left columns then right columns) and
// filters them. A left join then adds each left row without a surviving match,
// with NULL right columns. NULL keys never match.
//
// Output rows carry the left row's change kind; the build side must be all
// inserts (a changing build side needs a streaming join). EndOfStream goes
// downstream once both inputs have ended; a watermark goes downstream as the
// minimum over the inputs still running; barriers pass through.
//
// In a job without checkpoints, the rows it holds (the build side and the
// pending left batches) are bounded by half its budget (JoinConfig.MemoryLimit,
// else the task's WorkMem; half, as building copies them): past it, it
// partitions both inputs to disk and joins partition by partition
// (join_hash_spill.go).
type hashJoinOp struct {
	cfg  JoinConfig
	spec exec.OperatorSpec
	left bool
	// full: a full or right join, which also emits, once both inputs ended,
	// the right rows no left row matched (rightMatched marks the others).
	full         bool
	rightMatched []bool
	// semi: one of the semi and anti joins (join_semi.go), whose output is
	// one side's columns. pairs is the schema of a pair, which Extra reads
	// (left columns, right columns); out is pairs unless keep (JoinConfig.Keep)
	// picks some of them, or the join is a semi or anti join.
	semi  semiKind
	pairs *arrow.Schema
	keep  []int
	out   *arrow.Schema
	extra *expr.Expr
	mem   memory.Allocator
	tc    *exec.TaskContext

	budget int64
	held   int64 // bytes of right and pending
	level  int   // of partitioning, in a spilled join's partition
	spill  *joinSpill

	right []arrow.RecordBatch
	build arrow.RecordBatch // nil when the right side had no rows
	// The build side's index: ints for one integer key (join_hash_int.go),
	// else table, whose key ids head maps to their first right row (-1 for
	// none). next chains the right rows of a key, -1 at the end.
	ints  *intIndex
	table state.Keyed
	// packed and packNull: a packed intIndex's scratch for a probe batch.
	packed   []int64
	packNull []bool
	head     []int32
	next     []int32
	built    bool
	pending  []exec.Batch
	in       twoInputs

	keys    state.RowKeys
	keyArrs []arrow.Array
	ids     []int32
	li, ri  []int32
	sel     []int32
}

var _ exec.Operator = (*hashJoinOp)(nil)

func newHashJoinOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg JoinConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("hash_join: bad config: %w", err)
	}
	o := &hashJoinOp{cfg: cfg, spec: spec, extra: cfg.Extra}
	switch cfg.Kind {
	case "inner":
	case "left":
		o.left = true
	case "full":
		o.left, o.full = true, true
	case "right":
		o.full = true
	case "semi", "anti", "right_semi", "right_anti":
		o.semi = semiKinds[cfg.Kind]
		o.full = o.semi.buildOutput()
	default:
		return nil, fmt.Errorf("hash_join: unsupported join kind %q", cfg.Kind)
	}
	if len(cfg.LeftKeys) != len(cfg.RightKeys) {
		return nil, fmt.Errorf("hash_join: %d left keys and %d right keys", len(cfg.LeftKeys), len(cfg.RightKeys))
	}
	o.out = spec.Out.Arrow()
	o.pairs = o.out // an inner or outer join's output, unless it keeps only some
	if o.semi != 0 || cfg.Keep != nil {
		o.pairs = arrow.NewSchema(append(cfg.Left.Arrow().Fields(), cfg.Right.Arrow().Fields()...), nil)
	}
	if cfg.Keep != nil {
		if o.semi != 0 {
			return nil, fmt.Errorf("hash_join: a %s join keeps a side, not columns of pairs", cfg.Kind)
		}
		if len(cfg.Keep) != o.out.NumFields() {
			return nil, fmt.Errorf("hash_join: %d kept columns for an output of %d", len(cfg.Keep), o.out.NumFields())
		}
		for _, c := range cfg.Keep {
			if c < 0 || c >= o.pairs.NumFields() {
				return nil, fmt.Errorf("hash_join: kept column %d of a pair of %d", c, o.pairs.NumFields())
			}
		}
		o.keep = cfg.Keep
	}
	return o, nil
}

func (o *hashJoinOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	o.tc = tc
	// Without keys there is nothing to partition by: no spilling.
	if (tc == nil || !tc.Checkpointing) && len(o.cfg.LeftKeys) > 0 {
		o.budget = spillBudget(o.cfg.MemoryLimit, tc)
	}
	return nil
}

func (o *hashJoinOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	switch input {
	case 1:
		if o.built {
			return fmt.Errorf("hash_join: right batch after the right side ended")
		}
		for _, op := range b.Ops {
			if op != exec.Insert {
				return fmt.Errorf("hash_join: %s rows on the build (right) side are not supported", op)
			}
		}
		if o.spill != nil {
			return o.spill.right.write(o.mem, b.Rec, nil, o.cfg.RightKeys)
		}
		b.Rec.Retain()
		o.right = append(o.right, b.Rec)
		o.held += vector.RecordBytes(b.Rec)
		return o.checkBudget()
	case 0:
		if o.spill != nil {
			return o.spillLeft(b)
		}
		if !o.built {
			b.Rec.Retain()
			if b.Ops != nil {
				b.Ops = slices.Clone(b.Ops)
			}
			o.pending = append(o.pending, b)
			o.held += vector.RecordBytes(b.Rec)
			return o.checkBudget()
		}
		return o.probe(ctx, b, out)
	}
	return fmt.Errorf("hash_join: no input %d", input)
}

func (o *hashJoinOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if input < 0 || input > 1 {
		return fmt.Errorf("hash_join: no input %d", input)
	}
	switch s.Kind {
	case exec.EndOfStream:
		first, ended := o.in.end(input)
		if !first {
			return nil
		}
		if o.spill != nil {
			if ended {
				if err := o.drainSpill(ctx, out); err != nil {
					return err
				}
				return out.CollectSignal(ctx, s)
			}
			return o.in.forward(ctx, out)
		}
		if input == 1 {
			if err := o.buildTable(); err != nil {
				return err
			}
			pending := o.pending
			o.pending = nil
			for i, b := range pending {
				err := o.probe(ctx, b, out)
				b.Rec.Release()
				if err != nil {
					for _, rest := range pending[i+1:] {
						rest.Rec.Release()
					}
					return err
				}
			}
		}
		if ended {
			if err := o.emitUnmatchedRight(ctx, out); err != nil {
				return err
			}
			return out.CollectSignal(ctx, s)
		}
		return o.in.forward(ctx, out)
	case exec.Watermark:
		return o.in.watermark(ctx, input, s.Watermark, out)
	case exec.Idle:
		return o.in.idleInput(ctx, input, out)
	}
	return out.CollectSignal(ctx, s)
}

// buildTable concatenates the right side and indexes it by key.
func (o *hashJoinOp) buildTable() error {
	o.built = true
	right := o.right
	o.right = nil
	defer func() {
		for _, r := range right {
			r.Release()
		}
	}()
	if len(right) == 0 {
		return nil
	}
	if len(right) == 1 {
		o.build = right[0]
		o.build.Retain()
	} else {
		ncols := int(right[0].NumCols())
		cols := make([]arrow.Array, 0, ncols)
		parts := make([]arrow.Array, len(right))
		rows := 0
		for _, r := range right {
			if int(r.NumCols()) != ncols {
				return fmt.Errorf("hash_join: right batches of %d and %d columns", ncols, r.NumCols())
			}
			rows += int(r.NumRows())
		}
		for c := range ncols {
			for i, r := range right {
				parts[i] = r.Column(c)
			}
			a, err := array.Concatenate(parts, o.mem)
			if err != nil {
				vector.ReleaseArrays(cols)
				return fmt.Errorf("hash_join: %w", err)
			}
			cols = append(cols, a)
		}
		rec, err := vector.MakeRecord(right[0].Schema(), cols, rows)
		if err != nil {
			return fmt.Errorf("hash_join: %w", err)
		}
		o.build = rec
	}
	n := int(o.build.NumRows())
	if len(o.cfg.RightKeys) == 0 {
		return nil // every right row matches every left row (probeAll)
	}
	arrs, err := o.keyColumns(o.build, o.cfg.RightKeys)
	if err != nil {
		return err
	}
	if allIntKeyed(arrs) {
		o.next = make([]int32, n)
		if o.ints = buildIntIndex(arrs, o.next); o.ints != nil {
			return nil
		}
	}
	if err := o.keys.Encode(arrs, nil, n); err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	o.table = state.NewKeyTable()
	gids := make([]uint32, n)
	// Room for every row's key at once (a key is as often unique as not):
	// no doubling of the table on the way.
	o.table.Reserve(n, o.keys.Bytes())
	o.table.InsertRows(&o.keys, gids)
	o.head = make([]int32, o.table.Len())
	for i := range o.head {
		o.head[i] = -1
	}
	o.next = make([]int32, n)
	for r := n - 1; r >= 0; r-- {
		if o.keys.Null(r) {
			o.next[r] = -1
			continue
		}
		g := gids[r]
		o.next[r] = o.head[g]
		o.head[g] = int32(r)
	}
	return nil
}

func (o *hashJoinOp) keyColumns(rec arrow.RecordBatch, cols []int) ([]arrow.Array, error) {
	o.keyArrs = o.keyArrs[:0]
	for _, c := range cols {
		if c < 0 || c >= int(rec.NumCols()) {
			return nil, fmt.Errorf("hash_join: key column %d out of range (%d columns)", c, rec.NumCols())
		}
		o.keyArrs = append(o.keyArrs, rec.Column(c))
	}
	return o.keyArrs, nil
}

// probe joins one left batch against the built table.
func (o *hashJoinOp) probe(ctx context.Context, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	nl := int(b.Rec.NumCols())
	if o.pairs.NumFields() < nl {
		return fmt.Errorf("hash_join: pairs of %d columns for a left side of %d", o.pairs.NumFields(), nl)
	}
	if len(o.cfg.LeftKeys) == 0 {
		if o.semi != 0 {
			return o.probeSemi(ctx, b, nil, out)
		}
		return o.probeAll(ctx, b, out)
	}
	// ids[i]: the first right row of left row i's key, -1 for none.
	o.ids = vector.GrowSlice(o.ids, n)
	ids := o.ids
	if o.build == nil {
		for i := range ids {
			ids[i] = -1
		}
	} else {
		arrs, err := o.keyColumns(b.Rec, o.cfg.LeftKeys)
		if err != nil {
			return err
		}
		for i, a := range arrs {
			rt := o.build.Column(o.cfg.RightKeys[i]).DataType()
			if !arrow.TypeEqual(a.DataType(), rt) {
				return fmt.Errorf("hash_join: key %d is %s on the left and %s on the right", i, a.DataType(), rt)
			}
		}
		if o.ints != nil {
			o.ints.lookup(arrs, ids, &o.packed, &o.packNull)
		} else {
			if err := o.keys.Encode(arrs, nil, n); err != nil {
				return fmt.Errorf("hash_join: %w", err)
			}
			o.table.LookupRows(&o.keys, ids)
			for i, g := range ids {
				if g >= 0 {
					ids[i] = o.head[g]
				}
			}
		}
	}
	if o.semi != 0 {
		return o.probeSemi(ctx, b, ids, out)
	}
	var matched []bool
	if o.left && o.extra != nil {
		matched = make([]bool, n)
	}
	li, ri := o.li[:0], o.ri[:0]
	defer func() { o.li, o.ri = li[:0], ri[:0] }()
	for i := range n {
		found := false
		for r := ids[i]; r >= 0; r = o.next[r] {
			found = true
			li, ri = append(li, int32(i)), append(ri, r)
			if len(li) >= vector.OutBatchRows {
				if err := o.emitPairs(ctx, b, li, ri, matched, o.extra, out); err != nil {
					return err
				}
				li, ri = li[:0], ri[:0]
			}
		}
		if !found && o.left && o.extra == nil {
			li, ri = append(li, int32(i)), append(ri, -1)
			if len(li) >= vector.OutBatchRows {
				if err := o.emitPairs(ctx, b, li, ri, nil, nil, out); err != nil {
					return err
				}
				li, ri = li[:0], ri[:0]
			}
		}
	}
	if len(li) > 0 {
		if err := o.emitPairs(ctx, b, li, ri, matched, o.extra, out); err != nil {
			return err
		}
		li, ri = li[:0], ri[:0]
	}
	if matched == nil {
		return nil
	}
	// Left join with Extra: the rows no candidate survived for.
	for i, m := range matched {
		if m {
			continue
		}
		li, ri = append(li, int32(i)), append(ri, -1)
		if len(li) >= vector.OutBatchRows {
			if err := o.emitPairs(ctx, b, li, ri, nil, nil, out); err != nil {
				return err
			}
			li, ri = li[:0], ri[:0]
		}
	}
	if len(li) > 0 {
		return o.emitPairs(ctx, b, li, ri, nil, nil, out)
	}
	return nil
}

// probeAll joins a left batch to every right row, for a join without keys
// (a nested-loop join: CROSS JOIN, or a condition that is not an equality of
// the two sides), Extra filtering the pairs.
func (o *hashJoinOp) probeAll(ctx context.Context, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	nr := 0
	if o.build != nil {
		nr = int(o.build.NumRows())
	}
	var matched []bool
	if o.left && o.extra != nil {
		matched = make([]bool, n)
	}
	li, ri := o.li[:0], o.ri[:0]
	defer func() { o.li, o.ri = li[:0], ri[:0] }()
	flush := func(extra *expr.Expr, matched []bool) error {
		if len(li) == 0 {
			return nil
		}
		err := o.emitPairs(ctx, b, li, ri, matched, extra, out)
		li, ri = li[:0], ri[:0]
		return err
	}
	for i := 0; i < n && nr > 0; i++ {
		for r := range nr {
			li, ri = append(li, int32(i)), append(ri, int32(r))
			if len(li) >= vector.OutBatchRows {
				if err := flush(o.extra, matched); err != nil {
					return err
				}
			}
		}
	}
	if err := flush(o.extra, matched); err != nil {
		return err
	}
	if !o.left || (nr > 0 && o.extra == nil) {
		return nil
	}
	// A left join: the rows nothing matched, NULL-extended.
	for i := range n {
		if matched == nil || !matched[i] {
			li, ri = append(li, int32(i)), append(ri, -1)
			if len(li) >= vector.OutBatchRows {
				if err := flush(nil, nil); err != nil {
					return err
				}
			}
		}
	}
	return flush(nil, nil)
}

// emitPairs gathers left rows li beside right rows ri (-1: NULLs), filters them
// by extra when set (marking the left rows that survive in matched), and emits.
func (o *hashJoinOp) emitPairs(ctx context.Context, b exec.Batch, li, ri []int32, matched []bool, extra *expr.Expr, out exec.Collector) error {
	// A join can emit far more rows than it reads, all inside one task's fused
	// chain where no queue notices a cancelled job: check here.
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	k := len(li)
	nl := int(b.Rec.NumCols())
	if o.build != nil && nl+int(o.build.NumCols()) != o.pairs.NumFields() {
		return fmt.Errorf("hash_join: %d left and %d right columns for pairs of %d",
			nl, o.build.NumCols(), o.pairs.NumFields())
	}
	// With no Extra to read them, only the kept columns; else whole pairs,
	// cut to the kept columns once Extra has chosen.
	whole := extra != nil || o.keep == nil
	cols, schema := o.keep, o.out
	if whole {
		cols, schema = allColumns(o.pairs.NumFields()), o.pairs
	}
	gathered := make([]arrow.Array, 0, len(cols))
	for _, c := range cols {
		var a arrow.Array
		var err error
		switch {
		case c < nl:
			a, err = vector.GatherArray(o.mem, b.Rec.Column(c), li)
		case o.build != nil:
			a, err = vector.GatherArray(o.mem, o.build.Column(c-nl), ri)
		default:
			a = array.MakeArrayOfNull(o.mem, o.pairs.Field(c).Type, k)
		}
		if err != nil {
			vector.ReleaseArrays(gathered)
			return fmt.Errorf("hash_join: %w", err)
		}
		gathered = append(gathered, a)
	}
	rec, err := vector.MakeRecord(schema, gathered, k)
	if err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	defer rec.Release()
	ops := vector.GatherOps(b.Ops, li)
	if extra == nil {
		o.markRight(ri, nil)
		return o.emit(ctx, exec.Batch{Rec: rec, Ops: ops}, out)
	}
	res, err := expr.Eval(extra, rec, o.mem)
	if err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	defer res.Release()
	cond, ok := res.(*array.Boolean)
	if !ok {
		if res.NullN() == res.Len() {
			return nil
		}
		return fmt.Errorf("hash_join: condition is %s, not boolean", res.DataType())
	}
	sel := trueRows(cond, make([]int32, 0, k))
	o.markRight(ri, sel)
	if matched != nil {
		for _, j := range sel {
			matched[li[j]] = true
		}
	}
	switch len(sel) {
	case 0:
		return nil
	case k:
		return o.emit(ctx, exec.Batch{Rec: rec, Ops: ops}, out)
	}
	if o.keep != nil { // gather only the kept columns of the surviving pairs
		rec = o.project(rec)
		defer rec.Release()
	}
	kept, err := vector.GatherRecord(o.mem, rec, sel)
	if err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	defer kept.Release()
	return out.Collect(ctx, exec.Batch{Rec: kept, Ops: vector.GatherOps(ops, sel)})
}

// emit sends a batch of whole pairs, or of the kept columns already, with
// the output's columns.
func (o *hashJoinOp) emit(ctx context.Context, b exec.Batch, out exec.Collector) error {
	if o.keep == nil || b.Rec.Schema() == o.out {
		return out.Collect(ctx, b)
	}
	b.Rec = o.project(b.Rec)
	defer b.Rec.Release()
	return out.Collect(ctx, b)
}

// project returns a new reference to the kept columns of a record of whole
// pairs: no copy.
func (o *hashJoinOp) project(rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, len(o.keep))
	for i, c := range o.keep {
		cols[i] = rec.Column(c)
	}
	return array.NewRecordBatch(o.out, cols, rec.NumRows())
}

// allColumns returns 0..n-1.
func allColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// markRight records, for a full join, the right rows ri (those at sel, or all
// when sel is nil) as matched.
func (o *hashJoinOp) markRight(ri, sel []int32) {
	if !o.full || o.build == nil {
		return
	}
	if o.rightMatched == nil {
		o.rightMatched = make([]bool, o.build.NumRows())
	}
	if sel == nil {
		for _, r := range ri {
			if r >= 0 {
				o.rightMatched[r] = true
			}
		}
		return
	}
	for _, j := range sel {
		if r := ri[j]; r >= 0 {
			o.rightMatched[r] = true
		}
	}
}

// emitUnmatchedRight sends, for a full join, the right rows no left row
// matched, with NULL left columns; for a right semi join, the right rows some
// left row matched (and a right anti join's output has no left columns).
func (o *hashJoinOp) emitUnmatchedRight(ctx context.Context, out exec.Collector) error {
	if !o.full || o.build == nil {
		return nil
	}
	want := o.semi == rightSemi
	var idx []int32
	for r := range int(o.build.NumRows()) {
		if (o.rightMatched != nil && o.rightMatched[r]) == want {
			idx = append(idx, int32(r))
		}
	}
	schema := o.out // a right semi or anti join's: the build side's columns
	if o.keep != nil {
		schema = o.pairs // with NULL left columns, kept columns after
	}
	nl := schema.NumFields() - int(o.build.NumCols())
	for lo := 0; lo < len(idx); lo += vector.OutBatchRows {
		chunk := idx[lo:min(len(idx), lo+vector.OutBatchRows)]
		cols := make([]arrow.Array, 0, schema.NumFields())
		for j := range nl {
			cols = append(cols, array.MakeArrayOfNull(o.mem, schema.Field(j).Type, len(chunk)))
		}
		cols, err := vector.GatherColumns(o.mem, cols, o.build.Columns(), chunk)
		if err != nil {
			return fmt.Errorf("hash_join: %w", err)
		}
		rec, err := vector.MakeRecord(schema, cols, len(chunk))
		if err != nil {
			return fmt.Errorf("hash_join: %w", err)
		}
		err = o.emit(ctx, exec.Batch{Rec: rec}, out)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *hashJoinOp) Close(ctx context.Context) error {
	for _, r := range o.right {
		r.Release()
	}
	o.right = nil
	for _, b := range o.pending {
		b.Rec.Release()
	}
	o.pending = nil
	if o.build != nil {
		o.build.Release()
		o.build = nil
	}
	if o.table != nil {
		o.table.Release()
	}
	o.table, o.ints = nil, nil
	if o.spill != nil {
		o.spill.remove()
		o.spill = nil
	}
	return nil
}

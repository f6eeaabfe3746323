package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// hashAggOp is kind "hash_agg" (see HashAggConfig): GROUP BY over a hash table of
// keys (exec/state) with one state array per aggregate (hashagg_funcs.go).
//
// Per batch: the key columns are encoded (or, for one text column, read in
// place), then hashed and probed in one loop, giving a group id per row; then
// each aggregate folds the batch with one loop over the group ids.
//
// With AggEmitFinal (bounded input) the groups are emitted at end of stream on
// input 0, in order of first appearance, in batches of at most vector.OutBatchRows
// rows, and EndOfStream is forwarded.
//
// With AggEmitUpdates (unbounded input) the operator emits changes whenever its
// task flushes it (Flusher): a partial aggregate emits the states folded since
// the last flush, as inserts, plus the signed number of rows per group, and
// starts afresh; a complete or final one emits, for every group changed since
// the last flush, its row as last emitted (UpdateBefore, or Delete when the
// group has no rows left) and then its new row (UpdateAfter, or Insert when it
// is new). The old rows are computed just before a group's first change after a
// flush, so the state is kept once.
//
// Rows with change kind Delete or UpdateBefore retract: count and sum subtract
// (avg too, through its sum and count); min and max return an error.
//
// It is Checkpointed (hashagg_state.go). In updates mode it flushes when a
// barrier passes, so that its snapshot has no changes pending. In updates
// mode with GROUP BY its groups may live on the disk state backend
// (hashagg_disk.go); on the memory backend they fail the job past the
// TaskManager's bound (TaskContext.StateLimit).
type hashAggOp struct {
	cfg     HashAggConfig
	out     *arrow.Schema
	outDTs  []arrow.DataType
	keyCols []int
	aggs    []aggregate
	updates bool
	// rows, in updates mode, is the signed number of rows of each group: the
	// partial phase emits it as its last column, the final phase sums it.
	rows *countAgg

	mem   memory.Allocator
	table state.Keyed
	// intKeys: the key is one bigint, timestamp or double column, whose
	// groups an integer KeyTable holds (newTable).
	intKeys  bool
	keyTypes []arrow.DataType
	keys     state.RowKeys
	keyArrs  []arrow.Array
	small    smallKeys
	gids     []uint32
	signs    []int8
	seen     bool
	done     bool

	// partialRows counts the rows a partial aggregate has folded since it
	// last started afresh, partialRuns those of them in the group of the row
	// before; unclustered is set once its groups outgrew partialGroups
	// without its rows clustering by group (partialGroups).
	partialRows int
	partialRuns int
	unclustered bool

	// The memory budget (HashAggConfig.MemoryLimit, else the task's
	// WorkMem; 0: none) and, once the groups outgrew it, the spill of the
	// rows of new groups (hashagg_spill.go), at this level of partitioning.
	tc            *exec.TaskContext
	spec          exec.OperatorSpec
	budget        int64
	spill         *partitionedSpill
	level         int
	found         []int32
	inIdx, outIdx []int32

	// Updates mode, complete and final phases.
	dirty   []uint32            // groups changed since the last flush
	isDirty []bool              // by group
	emitted []bool              // by group: its row is out downstream
	oldIDs  []uint32            // the dirty groups that had been emitted ...
	oldRows []arrow.RecordBatch // ... and their rows as emitted, in that order

	// disk is the state on the disk backend (hashagg_disk.go), nil on memory.
	disk *aggDisk
	// stateLimit bounds, on the memory backend, the groups a streaming
	// aggregation keeps (TaskContext.StateLimit); 0: none.
	stateLimit int64
}

// partialGroups is the most groups a partial aggregate without a memory
// problem holds while its rows cluster by group, at least half of them in
// the group of the row before: it then sends its groups on and starts
// afresh, as a group's rows have mostly come together already. Rows with
// two or more a group on average do not cluster for that: WordCount's words
// (58k in 8M rows of 10 x kjv) come again all through the text, and restarts
// every 8k groups sent on nine times as many rows. So TPC-H's q18 (GROUP BY
// l_orderkey over lineitem, stored sorted by it: 1.5M groups of 4 rows)
// folds in a table that stays in the cache, where one of all the groups
// missed the cache on nearly every new key and spent a third of its time
// growing (BenchmarkHashAggOrderKeys). Rows that do not cluster, as a
// GROUP BY l_partkey over lineitem (200k groups in random order), would lose
// most of their folding by restarts: the table keeps growing for them.
//
// At 8k groups the table's slots (16 bytes each, at most half full: 256 KiB)
// stay in a core's L2 cache; at 64k (4 MiB) the q18 partial's inserts missed
// it on nearly every new key. A restart costs an emit of the groups, which
// clustered rows would send anyway.
const partialGroups = 1 << 13

// partialSlice is the most rows a partial aggregate whose rows cluster folds
// between its checks for a restart.
const partialSlice = 1 << 12

var _ exec.Operator = (*hashAggOp)(nil)
var _ exec.Flusher = (*hashAggOp)(nil)

func newHashAggOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg HashAggConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("hash_agg: bad config: %w", err)
	}
	return newHashAgg(cfg, spec)
}

func newHashAgg(cfg HashAggConfig, spec exec.OperatorSpec) (*hashAggOp, error) {
	if cfg.Phase == "" {
		cfg.Phase = AggComplete
	}
	switch cfg.Phase {
	case AggComplete, AggPartial, AggFinal:
	default:
		return nil, fmt.Errorf("hash_agg: unknown phase %q", cfg.Phase)
	}
	switch cfg.Emit {
	case "", AggEmitFinal, AggEmitUpdates:
	default:
		return nil, fmt.Errorf("hash_agg: unknown emit mode %q", cfg.Emit)
	}
	o := &hashAggOp{cfg: cfg, spec: spec, updates: cfg.Emit == AggEmitUpdates}
	nk := len(cfg.GroupBy)
	o.keyCols = cfg.GroupBy
	if cfg.Phase == AggFinal {
		// A final aggregate reads a partial one's output: keys first, then states.
		o.keyCols = make([]int, nk)
		for i := range o.keyCols {
			o.keyCols[i] = i
		}
	}
	width, err := o.buildAggs()
	if err != nil {
		return nil, err
	}
	width += nk
	if len(spec.Out) != width {
		return nil, fmt.Errorf("hash_agg: output schema has %d columns, the config makes %d", len(spec.Out), width)
	}
	o.out = spec.Out.Arrow()
	for _, f := range o.out.Fields() {
		o.outDTs = append(o.outDTs, f.Type)
	}
	return o, nil
}

// buildAggs makes fresh aggregate states (and the row count in updates mode)
// and returns the number of columns they emit.
func (o *hashAggOp) buildAggs() (int, error) {
	o.releaseAggs()
	o.aggs = o.aggs[:0]
	col := len(o.keyCols)
	width := 0
	for _, a := range o.cfg.Aggs {
		first := a.Arg
		if o.cfg.Phase == AggFinal {
			first = col
			col++
			if a.Func == "avg" {
				col++
			}
		}
		agg, err := newAggregate(a, o.cfg.Phase, first)
		if err != nil {
			return 0, err
		}
		o.aggs = append(o.aggs, agg)
		width += agg.width()
	}
	if o.updates {
		switch o.cfg.Phase {
		case AggFinal:
			o.rows = &countAgg{col: col, partial: true}
		case AggPartial:
			o.rows = &countAgg{col: -1}
			width++
		default:
			o.rows = &countAgg{col: -1}
		}
	}
	return width, nil
}

func (o *hashAggOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	o.table = state.NewKeyTable()
	o.tc = tc
	if o.stateBackend(tc) == StateDisk {
		if err := o.openDisk(tc); err != nil {
			return err
		}
	}
	if o.disk == nil && o.updates && o.cfg.Phase != AggPartial && len(o.keyCols) > 0 {
		o.stateLimit = tc.StateLimit
	}
	// Updates keep their state (bounded by stateLimit above, or on disk);
	// one group needs no budget.
	if !o.updates && len(o.keyCols) > 0 {
		o.budget = spillBudget(o.cfg.MemoryLimit, tc)
		if o.cfg.Phase == AggPartial {
			// A partial aggregate's groups are only a head start for the final
			// one, which runs in the same slots with the whole budget: a
			// quarter of it is enough to fold repeated keys, and leaves the
			// memory to the state that must be kept.
			o.budget /= 4
		}
	}
	return nil
}

func (o *hashAggOp) ngroups() int {
	if len(o.keyCols) == 0 {
		return 1
	}
	return o.table.Len()
}

func (o *hashAggOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if o.done {
		return fmt.Errorf("hash_agg: batch after end of stream")
	}
	if o.table == nil {
		return fmt.Errorf("hash_agg: batch before Open")
	}
	if b.Ops != nil && len(b.Ops) != n {
		return fmt.Errorf("hash_agg: %d change kinds for %d rows", len(b.Ops), n)
	}
	o.seen = true
	if o.cfg.Phase == AggPartial && !o.updates && !o.unclustered && o.spill == nil && o.disk == nil && n > partialSlice && o.mayOutgrow(n) {
		// Clustered rows restart in a table of about partialGroups keys:
		// check after each slice, not only after the batch, which may hold
		// as many groups again (64k rows of 4 a group: 16k).
		for lo := 0; lo < n; lo += partialSlice {
			hi := min(lo+partialSlice, n)
			sub := exec.Batch{Rec: b.Rec.NewSlice(int64(lo), int64(hi))}
			if b.Ops != nil {
				sub.Ops = b.Ops[lo:hi]
			}
			err := o.processBatch(ctx, sub, out)
			sub.Rec.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	return o.processBatch(ctx, b, out)
}

// mayOutgrow reports whether n more rows may take a partial aggregate's
// groups past partialGroups, at the rate of new groups a row since it last
// started (unknown: yes). Few groups (TPC-H q1's four) fold batches whole:
// slicing them cost q1 a twentieth.
func (o *hashAggOp) mayOutgrow(n int) bool {
	if o.partialRows == 0 {
		return true
	}
	g := o.ngroups()
	return g+n*g/o.partialRows >= partialGroups
}

// runsOf counts the rows of gids in the group of the row before.
func runsOf(gids []uint32) int {
	n := 0
	for i := 1; i < len(gids); i++ {
		if gids[i] == gids[i-1] {
			n++
		}
	}
	return n
}

// processBatch folds b, n rows, and restarts or spills when the groups
// call for it (ProcessBatch has checked b).
func (o *hashAggOp) processBatch(ctx context.Context, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	o.partialRows += n
	if o.spill != nil {
		return o.foldSpilling(b)
	}
	if err := o.fold(b); err != nil {
		return err
	}
	if o.cfg.Phase == AggPartial && !o.updates && !o.unclustered && len(o.keyCols) > 0 {
		o.partialRuns += runsOf(o.gids[:n])
	}
	if o.disk != nil && o.cacheBytes() > o.disk.limit {
		return o.evict(ctx, out)
	}
	if o.stateLimit > 0 {
		if n := o.groupBytes(); n > o.stateLimit {
			return o.errStateLimit(n)
		}
	}
	if o.cfg.Phase == AggPartial && !o.updates && !o.unclustered && o.table.Len() >= partialGroups {
		if 2*o.partialRuns < o.partialRows {
			o.unclustered = true
		} else {
			return o.restartPartial(ctx, out, true)
		}
	}
	if o.budget > 0 && o.overBudget() {
		if o.cfg.Phase == AggPartial {
			// A partial aggregate's groups are only a head start for the
			// final one: it sends what it holds and starts afresh.
			return o.restartPartial(ctx, out, false)
		}
		sp, err := newPartitionedSpill("hash_agg", spillDir(o.tc), o.level)
		if err != nil {
			return err
		}
		o.spill = sp
	}
	return nil
}

// keyColumns sets o.keyArrs to the key columns of rec, checking their types.
func (o *hashAggOp) keyColumns(rec arrow.RecordBatch) error {
	o.keyArrs = o.keyArrs[:0]
	for _, c := range o.keyCols {
		if c < 0 || c >= int(rec.NumCols()) {
			return fmt.Errorf("hash_agg: key column %d out of range (%d columns)", c, rec.NumCols())
		}
		o.keyArrs = append(o.keyArrs, rec.Column(c))
	}
	if o.keyTypes == nil {
		for _, a := range o.keyArrs {
			o.keyTypes = append(o.keyTypes, a.DataType())
		}
	} else {
		for i, a := range o.keyArrs {
			if !arrow.TypeEqual(a.DataType(), o.keyTypes[i]) {
				return fmt.Errorf("hash_agg: key column %d changed type from %s to %s", i, o.keyTypes[i], a.DataType())
			}
		}
	}
	return nil
}

// encodeKeys encodes the key columns of rec, n rows, into o.keys.
func (o *hashAggOp) encodeKeys(rec arrow.RecordBatch, n int) error {
	if err := o.keyColumns(rec); err != nil {
		return err
	}
	return o.keys.Encode(o.keyArrs, nil, n)
}

// newTable returns an empty table for the groups' keys.
func (o *hashAggOp) newTable() *state.KeyTable {
	if o.intKeys {
		return state.NewIntKeyTable()
	}
	return state.NewKeyTable()
}

// fold adds the batch's rows to their groups, adding the groups not yet held.
func (o *hashAggOp) fold(b exec.Batch) error {
	rec, n := b.Rec, b.NumRows()
	o.gids = vector.GrowSlice(o.gids, n)
	gids := o.gids
	if len(o.keyCols) > 0 {
		if err := o.keyColumns(rec); err != nil {
			return err
		}
		if o.table.Len() == 0 && !o.intKeys && o.disk == nil && state.IntKeyed(o.keyTypes) {
			// The key's types are known from the first batch on.
			o.intKeys = true
			o.table.Release()
			o.table = o.newTable()
		}
		if !o.intKeys && o.disk == nil && o.small.groups(o.table, o.keyArrs, n, gids[:n]) {
			return o.foldInto(rec, b.Ops, gids[:n])
		}
		if kt, ok := o.table.(*state.KeyTable); ok && o.intKeys && o.disk == nil {
			if c, ok := o.keyArrs[0].(*array.Int64); ok && c.NullN() == 0 {
				// A bigint key without NULLs: its values are the keys
				// (KeyTable.InsertInt64s), no encoding.
				if o.cfg.Phase == AggFinal && kt.Len() == 0 {
					kt.Reserve(n, n*state.IntKeyBytes)
				}
				kt.InsertInt64s(c.Int64Values(), gids[:n])
				return o.foldInto(rec, b.Ops, gids[:n])
			}
		}
		if err := o.keys.Encode(o.keyArrs, nil, n); err != nil {
			return err
		}
		if o.cfg.Phase == AggFinal && o.table.Len() == 0 {
			// A partial aggregate emits each of its keys once: the table
			// will hold at least the first batch's keys.
			o.table.Reserve(n, o.keys.Bytes())
		}
		first := o.table.Len()
		o.table.InsertRows(&o.keys, gids[:n])
		if o.disk != nil {
			if err := o.loadGroups(first, gids[:n]); err != nil {
				return err
			}
		}
	} else {
		clear(gids)
	}
	return o.foldInto(rec, b.Ops, gids)
}

// foldInto folds the rows of rec, with change kinds ops, into the groups gids
// (one a row, every one already held).
func (o *hashAggOp) foldInto(rec arrow.RecordBatch, ops []exec.ChangeKind, gids []uint32) error {
	signs := rowSigns(ops, o.signs)
	if signs != nil {
		o.signs = signs
		if o.updates && o.cfg.Phase == AggPartial {
			// Its deltas would lose whether a sum has non-NULL inputs left.
			return fmt.Errorf("hash_agg: a partial aggregation emitting updates takes inserts only; retracting input needs a complete one")
		}
	}
	ng := o.ngroups()
	if o.updates && o.cfg.Phase != AggPartial {
		if err := o.markDirty(gids, ng); err != nil {
			return err
		}
	}
	for _, a := range o.aggs {
		if err := a.update(rec, gids, ng, signs); err != nil {
			return err
		}
	}
	if o.rows != nil {
		return o.rows.update(rec, gids, ng, signs)
	}
	return nil
}

// markDirty records the groups of gids as changed, first saving the rows as
// emitted of those that are out downstream, before the batch changes them.
func (o *hashAggOp) markDirty(gids []uint32, ngroups int) error {
	o.isDirty = vector.GrowZero(o.isDirty, ngroups)
	o.emitted = vector.GrowZero(o.emitted, ngroups)
	before := len(o.oldIDs)
	for _, g := range gids {
		if o.isDirty[g] {
			continue
		}
		o.isDirty[g] = true
		o.dirty = append(o.dirty, g)
		if o.emitted[g] {
			o.oldIDs = append(o.oldIDs, g)
		}
	}
	if len(o.oldIDs) == before {
		return nil
	}
	rec, err := o.rowsAt(state.GroupIDs(o.oldIDs[before:]))
	if err != nil {
		return err
	}
	o.oldRows = append(o.oldRows, rec)
	return nil
}

func (o *hashAggOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if s.Kind != exec.EndOfStream {
		if s.Kind == exec.Barrier && !o.done {
			// The changes before the barrier go out before it, and the snapshot
			// taken after it has none pending (checkpoint.go).
			if err := o.Flush(ctx, out); err != nil {
				return err
			}
		}
		return out.CollectSignal(ctx, s)
	}
	if o.done {
		return nil
	}
	o.done = true
	var err error
	if o.spill != nil {
		// The groups held go out first, freeing their memory for the spilled ones.
		if err := o.emit(ctx, out); err != nil {
			return err
		}
		o.release()
		if err := o.drainSpill(ctx, out); err != nil {
			return err
		}
		return out.CollectSignal(ctx, s)
	}
	if o.updates {
		if len(o.keyCols) == 0 && o.cfg.Phase != AggPartial && o.table != nil && (len(o.emitted) == 0 || !o.emitted[0]) {
			// Like a bounded aggregate, one without GROUP BY ends having emitted
			// its row, even without input.
			if err := o.markDirty([]uint32{0}, 1); err != nil {
				return err
			}
		}
		err = o.Flush(ctx, out)
	} else {
		err = o.emit(ctx, out)
	}
	if err != nil {
		return err
	}
	o.release()
	return out.CollectSignal(ctx, s)
}

// Flush emits, in updates mode, what changed since the last flush.
func (o *hashAggOp) Flush(ctx context.Context, out exec.Collector) error {
	if !o.updates || o.table == nil {
		return nil
	}
	if o.cfg.Phase == AggPartial {
		if !o.seen {
			return nil
		}
		if err := o.emit(ctx, out); err != nil {
			return err
		}
		o.table.Release()
		o.table = o.newTable()
		o.seen = false
		_, err := o.buildAggs()
		return err
	}
	if len(o.dirty) == 0 {
		return nil
	}
	live := func(g uint32) bool {
		return len(o.keyCols) == 0 || o.rows.counts[g] > 0
	}
	o.rows.counts = vector.PoolInt64.GrowZero(o.rows.counts, o.ngroups())
	// The old rows first, so that every group's retraction precedes its new row.
	done := 0
	for _, rec := range o.oldRows {
		n := int(rec.NumRows())
		ops := make([]exec.ChangeKind, n)
		for i, g := range o.oldIDs[done : done+n] {
			ops[i] = exec.UpdateBefore
			if !live(g) {
				ops[i] = exec.Delete
				o.emitted[g] = false
			}
		}
		done += n
		if err := out.Collect(ctx, exec.Batch{Rec: rec, Ops: ops}); err != nil {
			return err
		}
	}
	o.releaseOld()
	var ids []uint32
	for _, g := range o.dirty {
		o.isDirty[g] = false
		if live(g) {
			ids = append(ids, g)
		}
	}
	o.dirty = o.dirty[:0]
	for lo := 0; lo < len(ids); lo += vector.OutBatchRows {
		chunk := ids[lo:min(len(ids), lo+vector.OutBatchRows)]
		rec, err := o.rowsAt(state.GroupIDs(chunk))
		if err != nil {
			return err
		}
		ops := make([]exec.ChangeKind, len(chunk))
		for i, g := range chunk {
			ops[i] = exec.Insert
			if o.emitted[g] {
				ops[i] = exec.UpdateAfter
			}
			o.emitted[g] = true
		}
		err = out.Collect(ctx, exec.Batch{Rec: rec, Ops: ops})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// releaseOld drops the saved old rows.
func (o *hashAggOp) releaseOld() {
	for _, rec := range o.oldRows {
		rec.Release()
	}
	o.oldRows = o.oldRows[:0]
	o.oldIDs = o.oldIDs[:0]
}

// emit sends every group's row.
func (o *hashAggOp) emit(ctx context.Context, out exec.Collector) error {
	if o.table == nil {
		return fmt.Errorf("hash_agg: end of stream before Open")
	}
	n := o.ngroups()
	if len(o.keyCols) == 0 && o.cfg.Phase == AggPartial && !o.seen {
		// A partial aggregate without input has nothing to contribute; the final
		// one still emits its single row.
		n = 0
	}
	for lo := 0; lo < n; lo += vector.OutBatchRows {
		rec, err := o.rowsAt(state.GroupRange(lo, min(n, lo+vector.OutBatchRows)))
		if err != nil {
			return err
		}
		err = out.Collect(ctx, exec.Batch{Rec: rec})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// rowsAt builds the output rows of the groups sel: keys, then aggregates (then,
// for a partial aggregate in updates mode, the row counts).
func (o *hashAggOp) rowsAt(sel state.GroupSel) (arrow.RecordBatch, error) {
	nk := len(o.keyCols)
	cols := make([]arrow.Array, 0, len(o.outDTs))
	if nk > 0 {
		kc, err := o.table.DecodeKeys(o.mem, o.keyTypes, sel)
		if err != nil {
			return nil, err
		}
		cols = append(cols, kc...)
	}
	c := nk
	aggs := o.aggs
	if o.updates && o.cfg.Phase == AggPartial {
		aggs = append(aggs[:len(aggs):len(aggs)], o.rows)
	}
	for _, a := range aggs {
		var err error
		w := a.width()
		cols, err = a.result(o.mem, sel, o.outDTs[c:c+w], cols)
		if err != nil {
			vector.ReleaseArrays(cols)
			return nil, err
		}
		c += w
	}
	rec, err := vector.MakeRecord(o.out, cols, sel.Len())
	if err != nil {
		return nil, fmt.Errorf("hash_agg: %w", err)
	}
	return rec, nil
}

// release drops the group state; the operator only forwards signals afterwards.
func (o *hashAggOp) release() {
	o.closeDisk()
	o.releaseOld()
	if o.table != nil {
		o.table.Release()
	}
	o.table = nil
	o.releaseAggs()
	o.aggs = nil
	o.rows = nil
	o.keys = state.RowKeys{}
	o.gids, o.signs, o.keyArrs = nil, nil, nil
	o.dirty, o.isDirty, o.emitted = nil, nil, nil
}

// releaseAggs gives the aggregates' pooled state arrays back.
func (o *hashAggOp) releaseAggs() {
	for _, a := range o.aggs {
		if p, ok := a.(pooledAggregate); ok {
			p.release()
		}
	}
	if o.rows != nil {
		o.rows.release()
	}
}

func (o *hashAggOp) Close(ctx context.Context) error {
	o.release()
	if o.spill != nil {
		o.spill.remove()
		o.spill = nil
	}
	return nil
}

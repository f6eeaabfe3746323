package operators

// The aggregate functions of hash_agg: the interface, count, count(DISTINCT),
// min and max (sum and avg are in hashagg_sum.go, their DISTINCT forms in
// hashagg_distinct.go). Each keeps one state array
// per aggregate, indexed by group id, and folds a whole batch in one loop over
// the batch's group-id vector.

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// errRetractMinMax: min and max cannot take back a value without keeping every
// value of the group, which they do not (yet).
var errRetractMinMax = errors.New("hash_agg: min/max over retractions (delete/update) is not supported")

// aggregate is one aggregate's state over all groups.
type aggregate interface {
	// update folds the rows of rec into groups gids; ngroups is the number of
	// groups so far (every gid is below it). signs is nil or ±1 per row.
	update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error
	// result appends to dst the output columns, of types dts, for the groups sel.
	result(mem memory.Allocator, sel state.GroupSel, dts []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error)
	// width is the number of output columns.
	width() int
	// memBytes is the memory the state holds, for the operator's budget.
	memBytes() int64
	// saveState writes the state of groups 0..w.n-1 (hashagg_state.go).
	saveState(w *aggStateWriter) error
	// loadState restores, into a fresh aggregate, what saveState wrote.
	loadState(r *aggStateReader) error

	// For the disk state backend (hashagg_slots.go):
	// encodeSlots appends the state of group gids[i] to vals[i].
	encodeSlots(gids []uint32, vals [][]byte)
	// decodeSlots sets the state of group gids[i], below ngroups, from the
	// front of vals[i], which it advances.
	decodeSlots(gids []uint32, vals [][]byte, ngroups int) error
	// clearSlots forgets every group, keeping the input type.
	clearSlots()
	// inputType is the type of the input the state is of, nil while none
	// came; setInputType restores it.
	inputType() arrow.DataType
	setInputType(dt arrow.DataType) error
}

// pooledAggregate is an aggregate whose state arrays come from a vector.SlicePool:
// release gives them back, and the aggregate is not used afterwards.
type pooledAggregate interface {
	aggregate
	release()
}

// newAggregate builds the aggregate for spec in phase; first is the input
// column of its (first) argument in this operator's input.
func newAggregate(spec AggSpec, phase AggPhase, first int) (aggregate, error) {
	if (spec.Distinct || spec.Func == "string_agg") && phase != AggComplete {
		return nil, fmt.Errorf("hash_agg: %s runs only in the complete phase", spec.Func)
	}
	final := phase == AggFinal
	switch spec.Func {
	case "count":
		if spec.Distinct {
			if first < 0 {
				return nil, fmt.Errorf("hash_agg: count(DISTINCT *)")
			}
			return &countDistinctAgg{col: first}, nil
		}
		return &countAgg{col: first, partial: final}, nil
	case "string_agg":
		if first < 0 {
			return nil, fmt.Errorf("hash_agg: string_agg needs an argument")
		}
		return &stringAgg{col: first, sep: spec.Sep, order: spec.Order, distinct: spec.Distinct}, nil
	case "sum", "avg", "min", "max":
		if first < 0 {
			return nil, fmt.Errorf("hash_agg: %s needs an argument", spec.Func)
		}
		switch spec.Func {
		case "sum":
			if spec.Distinct {
				return newDistinctAgg(first, &sumAgg{col: first}), nil
			}
			return &sumAgg{col: first}, nil
		case "avg":
			if spec.Distinct {
				return newDistinctAgg(first, &avgAgg{sumCol: first, countCol: -1}), nil
			}
			a := &avgAgg{sumCol: first, countCol: -1, partial: phase == AggPartial}
			if final {
				a.countCol = first + 1
			}
			return a, nil
		default:
			if spec.Retract {
				return &minMaxRetractAgg{mm: minMaxAgg{col: first, max: spec.Func == "max"},
					vals: countDistinctAgg{col: first}}, nil
			}
			return &minMaxAgg{col: first, max: spec.Func == "max"}, nil
		}
	}
	return nil, fmt.Errorf("hash_agg: unknown aggregate %q", spec.Func)
}

func inputColumn(rec arrow.RecordBatch, i int) (arrow.Array, error) {
	if i < 0 || i >= int(rec.NumCols()) {
		return nil, fmt.Errorf("hash_agg: input column %d out of range (%d columns)", i, rec.NumCols())
	}
	return rec.Column(i), nil
}

// int64Column builds a bigint column from vals.
func int64Column(mem memory.Allocator, vals []int64) arrow.Array {
	b := array.NewInt64Builder(mem)
	b.AppendValues(vals, nil)
	a := b.NewArray()
	b.Release()
	return a
}

// countAgg is count(*), count(x) and, in the final phase, the sum of partial counts.
type countAgg struct {
	col     int // -1 for count(*)
	partial bool
	counts  []int64
}

func (a *countAgg) width() int { return 1 }

func (a *countAgg) memBytes() int64 { return int64(cap(a.counts)) * 8 }

// release gives the counts back to their pool (see pooledAggregate).
func (a *countAgg) release() {
	vector.PoolInt64.Put(a.counts)
	a.counts = nil
}

func (a *countAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	a.counts = vector.PoolInt64.GrowZero(a.counts, ngroups)
	counts := a.counts
	if a.col < 0 {
		if signs == nil {
			for _, g := range gids {
				counts[g]++
			}
		} else {
			for i, g := range gids {
				counts[g] += int64(signs[i])
			}
		}
		return nil
	}
	arr, err := inputColumn(rec, a.col)
	if err != nil {
		return err
	}
	valid, voff := vector.ValidityOf(arr)
	if a.partial {
		pc, ok := arr.(*array.Int64)
		if !ok {
			return fmt.Errorf("hash_agg: partial count column is %s, want int64", arr.DataType())
		}
		vals := pc.Int64Values()
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			if signs != nil && signs[i] < 0 {
				counts[g] -= vals[i]
			} else {
				counts[g] += vals[i]
			}
		}
		return nil
	}
	if valid == nil {
		if signs == nil {
			for _, g := range gids {
				counts[g]++
			}
		} else {
			for i, g := range gids {
				counts[g] += int64(signs[i])
			}
		}
		return nil
	}
	for i, g := range gids {
		if bitutil.BitIsSet(valid, voff+i) {
			if signs == nil {
				counts[g]++
			} else {
				counts[g] += int64(signs[i])
			}
		}
	}
	return nil
}

func (a *countAgg) result(mem memory.Allocator, sel state.GroupSel, _ []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	a.counts = vector.PoolInt64.GrowZero(a.counts, sel.End())
	return append(dst, int64Column(mem, sel.Int64s(a.counts))), nil
}

// countDistinctAgg is count(DISTINCT x): a table of (group, value) pairs with a
// reference count each, so that retractions work too.
type countDistinctAgg struct {
	col    int
	dt     arrow.DataType // the input's, once seen
	pairs  *state.KeyTable
	keys   state.RowKeys
	ids    []uint32
	refs   []int64
	counts []int64
	// byGroup lists each group's pairs for the disk backend, nil when the
	// pairs changed since (hashagg_distinct_disk.go).
	byGroup *pairIndex
}

func (a *countDistinctAgg) width() int { return 1 }

func (a *countDistinctAgg) memBytes() int64 {
	n := int64(cap(a.ids))*4 + int64(cap(a.refs)+cap(a.counts))*8
	if a.pairs != nil {
		n += a.pairs.Bytes()
	}
	return n
}

// table returns the (group, value) pairs, made at the first use: an
// aggregate that has seen no row holds no table (a window aggregation on
// disk makes its aggregates afresh each time it empties its cache).
func (a *countDistinctAgg) table() *state.KeyTable {
	if a.pairs == nil {
		a.pairs = state.NewKeyTable()
	}
	return a.pairs
}

func (a *countDistinctAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	return a.fold(rec, gids, ngroups, signs, nil)
}

// fold counts the rows of rec into the (group, value) pairs; changed, if not
// nil, hears of each row whose value enters its group (sign 1: its first
// copy) or leaves it (-1: its last copy retracted). NULLs are not counted.
func (a *countDistinctAgg) fold(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8, changed func(row int, sign int8)) error {
	arr, err := inputColumn(rec, a.col)
	if err != nil {
		return err
	}
	if a.dt == nil {
		a.dt = arr.DataType()
	} else if !arrow.TypeEqual(a.dt, arr.DataType()) {
		// The pairs' keys would mix two encodings.
		return fmt.Errorf("hash_agg: count(DISTINCT) input changed type from %s to %s", a.dt, arr.DataType())
	}
	a.counts = vector.GrowZero(a.counts, ngroups)
	n := len(gids)
	if err := a.keys.Encode([]arrow.Array{arr}, gids, n); err != nil {
		return err
	}
	a.ids = vector.GrowSlice(a.ids, n)
	a.table().InsertRows(&a.keys, a.ids)
	a.byGroup = nil
	a.refs = vector.GrowZero(a.refs, a.pairs.Len())
	valid, voff := vector.ValidityOf(arr)
	for i, p := range a.ids[:n] {
		if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
			continue
		}
		g := gids[i]
		if signs != nil && signs[i] < 0 {
			a.refs[p]--
			if a.refs[p] == 0 {
				a.counts[g]--
				if changed != nil {
					changed(i, -1)
				}
			}
		} else {
			a.refs[p]++
			if a.refs[p] == 1 {
				a.counts[g]++
				if changed != nil {
					changed(i, 1)
				}
			}
		}
	}
	return nil
}

func (a *countDistinctAgg) result(mem memory.Allocator, sel state.GroupSel, _ []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	a.counts = vector.GrowZero(a.counts, sel.End())
	return append(dst, int64Column(mem, sel.Int64s(a.counts))), nil
}

// minMaxAgg is min(x) or max(x), the same in every phase. Strings are kept in a
// per-group byte slice that is reused as the extreme changes.
type minMaxAgg struct {
	col    int
	max    bool
	kind   arrow.Type
	dt     arrow.DataType
	has    []bool
	ints   []int64
	floats []float64
	decs   []decimal128.Num
	bools  []bool
	strs   [][]byte
	// strBytes is what the strings of strs hold.
	strBytes int64
}

func (a *minMaxAgg) memBytes() int64 {
	return int64(cap(a.has)+cap(a.bools)) + int64(cap(a.ints)+cap(a.floats))*8 + int64(cap(a.decs))*16 +
		int64(cap(a.strs))*24 + a.strBytes
}

func (a *minMaxAgg) width() int { return 1 }

func (a *minMaxAgg) grow(n int) {
	a.has = vector.GrowZero(a.has, n)
	switch a.kind {
	case arrow.INT64, arrow.TIMESTAMP:
		a.ints = vector.GrowZero(a.ints, n)
	case arrow.FLOAT64:
		a.floats = vector.GrowZero(a.floats, n)
	case arrow.DECIMAL128:
		a.decs = vector.GrowZero(a.decs, n)
	case arrow.BOOL:
		a.bools = vector.GrowZero(a.bools, n)
	case arrow.STRING:
		a.strs = vector.GrowZero(a.strs, n)
	}
}

// floatLess orders doubles as PostgreSQL does: NaN above everything.
func floatLess(x, y float64) bool {
	if x != x {
		return false
	}
	return x < y || y != y
}

func (a *minMaxAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	if signs != nil {
		for _, s := range signs {
			if s < 0 {
				return errRetractMinMax
			}
		}
	}
	arr, err := inputColumn(rec, a.col)
	if err != nil {
		return err
	}
	dt := arr.DataType()
	if a.kind == 0 {
		switch dt.ID() {
		case arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT64, arrow.DECIMAL128, arrow.BOOL, arrow.STRING, arrow.NULL:
		default:
			return fmt.Errorf("hash_agg: cannot take min/max of %s", dt)
		}
		a.kind, a.dt = dt.ID(), dt
	} else if !arrow.TypeEqual(dt, a.dt) {
		return fmt.Errorf("hash_agg: min/max input changed type from %s to %s", a.dt, dt)
	}
	a.grow(ngroups)
	valid, voff := vector.ValidityOf(arr)
	has, mx := a.has, a.max
	switch v := arr.(type) {
	case *array.Int64, *array.Timestamp:
		var vals []int64
		if iv, ok := v.(*array.Int64); ok {
			vals = iv.Int64Values()
		} else {
			vals = arrow.Int64Traits.CastFromBytes(arr.Data().Buffers()[1].Bytes())[arr.Data().Offset():]
		}
		st := a.ints
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			x := vals[i]
			if !has[g] || (mx && x > st[g]) || (!mx && x < st[g]) {
				st[g], has[g] = x, true
			}
		}
	case *array.Float64:
		vals, st := v.Float64Values(), a.floats
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			x := vals[i]
			if !has[g] || (mx && floatLess(st[g], x)) || (!mx && floatLess(x, st[g])) {
				st[g], has[g] = x, true
			}
		}
	case *array.Decimal128:
		vals, st := v.Values(), a.decs
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			x := vals[i]
			if !has[g] || (mx && x.Greater(st[g])) || (!mx && x.Less(st[g])) {
				st[g], has[g] = x, true
			}
		}
	case *array.Boolean:
		st := a.bools
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			x := v.Value(i)
			if !has[g] || (mx && x && !st[g]) || (!mx && !x && st[g]) {
				st[g], has[g] = x, true
			}
		}
	case *array.String:
		st := a.strs
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			x := v.Value(i)
			if has[g] {
				c := compareBytesString(st[g], x)
				if (mx && c >= 0) || (!mx && c <= 0) {
					continue
				}
			}
			old := cap(st[g])
			st[g], has[g] = append(st[g][:0], x...), true
			a.strBytes += int64(cap(st[g]) - old)
		}
	}
	return nil
}

func compareBytesString(b []byte, s string) int {
	n := min(len(b), len(s))
	for i := range n {
		if b[i] != s[i] {
			if b[i] < s[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(b) < len(s):
		return -1
	case len(b) > len(s):
		return 1
	}
	return 0
}

func (a *minMaxAgg) result(mem memory.Allocator, sel state.GroupSel, dts []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	a.grow(sel.End())
	dt := dts[0]
	if a.kind != 0 && a.kind != arrow.NULL && !arrow.TypeEqual(dt, a.dt) {
		return nil, fmt.Errorf("hash_agg: min/max of %s cannot produce %s", a.dt, dt)
	}
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.Reserve(sel.Len())
	for i := range sel.Len() {
		g := sel.At(i)
		if !a.has[g] {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.Int64Builder:
			bb.Append(a.ints[g])
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(a.ints[g]))
		case *array.Float64Builder:
			bb.Append(a.floats[g])
		case *array.Decimal128Builder:
			bb.Append(a.decs[g])
		case *array.BooleanBuilder:
			bb.Append(a.bools[g])
		case *array.StringBuilder:
			bb.BinaryBuilder.Append(a.strs[g])
		}
	}
	return append(dst, b.NewArray()), nil
}

// rowSigns returns +1 for each row that adds to a result (Insert, UpdateAfter)
// and -1 for each that retracts (Delete, UpdateBefore), or nil when every row is
// an Insert, so aggregate loops can keep a branch-free fast path.
func rowSigns(ops []exec.ChangeKind, dst []int8) []int8 {
	if ops == nil {
		return nil
	}
	dst = vector.GrowSlice(dst, len(ops))
	retract := false
	for i, op := range ops {
		if op == exec.Delete || op == exec.UpdateBefore {
			dst[i] = -1
			retract = true
		} else {
			dst[i] = 1
		}
	}
	if !retract {
		return nil
	}
	return dst
}

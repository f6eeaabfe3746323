package operators

// sum and avg: exact per-group accumulation of bigint, double and decimal
// columns, and the conversions to the result type the planner asked for.

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// numAcc sums a numeric column per group exactly: bigint sums stay int64 until
// one overflows, and then spill into a decimal128 beside it (total = spill +
// ints); doubles sum as float64; decimals as decimal128 at the input's scale.
// nn counts the non-NULL inputs (net of retractions), so that a sum of nothing
// is NULL.
type numAcc struct {
	kind   arrow.Type // 0 until the first batch
	scale  int32
	ints   []int64
	spill  []decimal128.Num
	floats []float64
	decs   []decimal128.Num
	nn     []int64
}

func (a *numAcc) memBytes() int64 {
	return int64(cap(a.ints)+cap(a.floats)+cap(a.nn))*8 + int64(cap(a.spill)+cap(a.decs))*16
}

// grow makes room for n groups. The arrays come from pools (release gives
// them back): a partial aggregate that restarts builds its sums afresh each
// time, and a final one of TPC-H q18's 750k groups a task grows 18 MiB of
// them; from Go's allocator each doubling was fresh memory the kernel
// faulted in and zeroed, a tenth of q18's time.
func (a *numAcc) grow(n int) {
	a.nn = vector.PoolInt64.GrowZero(a.nn, n)
	switch a.kind {
	case arrow.INT64:
		a.ints = vector.PoolInt64.GrowZero(a.ints, n)
		if a.spill != nil {
			a.spill = vector.GrowZero(a.spill, n)
		}
	case arrow.FLOAT64:
		a.floats = poolFloat64.GrowZero(a.floats, n)
	case arrow.DECIMAL128:
		a.decs = poolDecimal.GrowZero(a.decs, n)
	}
}

// The pools of the sums' arrays of the kinds vector has no pool of.
var (
	poolFloat64 vector.SlicePool[float64]
	poolDecimal vector.SlicePool[decimal128.Num]
)

// release gives the arrays back to their pools; the accumulator is empty
// afterwards.
func (a *numAcc) release() {
	vector.PoolInt64.Put(a.nn)
	vector.PoolInt64.Put(a.ints)
	poolFloat64.Put(a.floats)
	poolDecimal.Put(a.decs)
	a.nn, a.ints, a.floats, a.decs, a.spill = nil, nil, nil, nil, nil
}

func (a *numAcc) add(arr arrow.Array, gids []uint32, ngroups int, signs []int8) error {
	dt := arr.DataType()
	if a.kind == 0 {
		switch dt.ID() {
		case arrow.INT64, arrow.FLOAT64:
		case arrow.DECIMAL128:
			a.scale = dt.(*arrow.Decimal128Type).Scale
		case arrow.NULL:
			// sum(NULL): nothing to add, ever.
			a.grow(ngroups)
			return nil
		default:
			return fmt.Errorf("hash_agg: cannot sum %s", dt)
		}
		a.kind = dt.ID()
	} else if dt.ID() != a.kind {
		return fmt.Errorf("hash_agg: sum input changed type from %s to %s", a.kind, dt)
	}
	a.grow(ngroups)
	valid, voff := vector.ValidityOf(arr)
	nn := a.nn
	switch v := arr.(type) {
	case *array.Int64:
		vals, ints := v.Int64Values(), a.ints
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			x, s := vals[i], ints[g]
			if signs != nil && signs[i] < 0 {
				r := s - x
				if (s^x)&(s^r) < 0 {
					a.spillInt(g, s, -1, x)
					r = 0
				}
				ints[g] = r
				nn[g]--
				continue
			}
			r := s + x
			if (s^r)&(x^r) < 0 {
				a.spillInt(g, s, 1, x)
				r = 0
			}
			ints[g] = r
			nn[g]++
		}
	case *array.Float64:
		vals, fs := v.Float64Values(), a.floats
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			if signs != nil && signs[i] < 0 {
				fs[g] -= vals[i]
				nn[g]--
			} else {
				fs[g] += vals[i]
				nn[g]++
			}
		}
	case *array.Decimal128:
		if sc := v.DataType().(*arrow.Decimal128Type).Scale; sc != a.scale {
			return fmt.Errorf("hash_agg: sum input changed scale from %d to %d", a.scale, sc)
		}
		vals, ds := v.Values(), a.decs
		if valid == nil && signs == nil {
			// No NULLs, no retractions: the loop without their tests per
			// row (TPC-H q1 sums four decimals and averages three).
			vals = vals[:len(gids)]
			for i, g := range gids {
				ds[g] = ds[g].Add(vals[i])
				nn[g]++
			}
			return nil
		}
		for i, g := range gids {
			if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
				continue
			}
			if signs != nil && signs[i] < 0 {
				ds[g] = ds[g].Sub(vals[i])
				nn[g]--
			} else {
				ds[g] = ds[g].Add(vals[i])
				nn[g]++
			}
		}
	}
	return nil
}

// spillInt moves an int64 sum s that is about to overflow by sign*x into the
// group's decimal spill.
func (a *numAcc) spillInt(g uint32, s int64, sign int, x int64) {
	if a.spill == nil {
		a.spill = make([]decimal128.Num, len(a.ints), cap(a.ints))
	}
	d := a.spill[g].Add(decimal128.FromI64(s))
	if sign < 0 {
		d = d.Sub(decimal128.FromI64(x))
	} else {
		d = d.Add(decimal128.FromI64(x))
	}
	a.spill[g] = d
}

// decimal returns group g's sum, unscaled, at scale a.scaleOf().
func (a *numAcc) decimal(g int) decimal128.Num {
	switch a.kind {
	case arrow.INT64:
		d := decimal128.FromI64(a.ints[g])
		if a.spill != nil {
			d = d.Add(a.spill[g])
		}
		return d
	case arrow.DECIMAL128:
		return a.decs[g]
	}
	return decimal128.Num{}
}

func (a *numAcc) float(g int) float64 {
	switch a.kind {
	case arrow.INT64:
		if a.spill != nil && a.spill[g] != (decimal128.Num{}) {
			return a.decimal(g).ToFloat64(0)
		}
		return float64(a.ints[g])
	case arrow.FLOAT64:
		return a.floats[g]
	case arrow.DECIMAL128:
		return a.decs[g].ToFloat64(a.scale)
	}
	return 0
}

var errNumericOverflow = errors.New("hash_agg: numeric value out of range")

// value appends group g's sum divided by div (1 for a plain sum) to b, whose
// type is the result type, rounding half away from zero where the result has
// fewer decimals.
func (a *numAcc) value(b array.Builder, g int, div int64) error {
	switch bb := b.(type) {
	case *array.Float64Builder:
		bb.Append(a.float(g) / float64(div))
	case *array.Decimal128Builder:
		scale := bb.Type().(*arrow.Decimal128Type).Scale
		if a.kind == arrow.FLOAT64 {
			if f := a.floats[g]; f == math.Trunc(f) && math.Abs(f) < 1<<62 {
				// An integral double sum (a final avg of bigints sums their
				// partial sums as doubles): divide exactly.
				d, err := divRound(decimal128.FromI64(int64(f)), 0, div, scale)
				if err != nil {
					return err
				}
				bb.Append(d)
				return nil
			}
			d, err := decimal128.FromFloat64(a.floats[g]/float64(div), 38, scale)
			if err != nil {
				return fmt.Errorf("%w: %v", errNumericOverflow, err)
			}
			bb.Append(d)
			return nil
		}
		d, err := divRound(a.decimal(g), a.kindScale(), div, scale)
		if err != nil {
			return err
		}
		bb.Append(d)
	case *array.Int64Builder:
		if a.kind == arrow.FLOAT64 {
			v := math.Round(a.floats[g] / float64(div))
			if v < math.MinInt64 || v >= math.MaxInt64 || v != v {
				return errNumericOverflow
			}
			bb.Append(int64(v))
			return nil
		}
		if a.kind == arrow.INT64 && div == 1 && (a.spill == nil || a.spill[g] == (decimal128.Num{})) {
			bb.Append(a.ints[g])
			return nil
		}
		d, err := divRound(a.decimal(g), a.kindScale(), div, 0)
		if err != nil {
			return err
		}
		bi := d.BigInt()
		if !bi.IsInt64() {
			return errNumericOverflow
		}
		bb.Append(bi.Int64())
	default:
		return fmt.Errorf("hash_agg: cannot produce a %s sum", b.Type())
	}
	return nil
}

func (a *numAcc) kindScale() int32 {
	if a.kind == arrow.DECIMAL128 {
		return a.scale
	}
	return 0
}

// divRound returns (v / 10^vs) / div as an unscaled decimal of scale s, rounded
// half away from zero.
func divRound(v decimal128.Num, vs int32, div int64, s int32) (decimal128.Num, error) {
	if div == 1 && vs == s {
		return v, nil
	}
	num := v.BigInt()
	den := big.NewInt(div)
	if s >= vs {
		num.Mul(num, pow10(s-vs))
	} else {
		den.Mul(den, pow10(vs-s))
	}
	if den.Sign() < 0 {
		num.Neg(num)
		den.Neg(den)
	}
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	// |r| * 2 >= den: round away from zero.
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if q.BitLen() > 127 {
		return decimal128.Num{}, errNumericOverflow
	}
	return decimal128.FromBigInt(q), nil
}

func pow10(n int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// sumAgg is sum(x) in every phase (a final sum sums partial sums).
type sumAgg struct {
	col int
	acc numAcc
}

func (a *sumAgg) width() int { return 1 }

func (a *sumAgg) memBytes() int64 { return a.acc.memBytes() }

// release gives the sums back to their pools (see pooledAggregate).
func (a *sumAgg) release() { a.acc.release() }

func (a *sumAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	arr, err := inputColumn(rec, a.col)
	if err != nil {
		return err
	}
	return a.acc.add(arr, gids, ngroups, signs)
}

func (a *sumAgg) result(mem memory.Allocator, sel state.GroupSel, dts []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	a.acc.grow(sel.End())
	b := array.NewBuilder(mem, dts[0])
	defer b.Release()
	b.Reserve(sel.Len())
	if db, ok := b.(*array.Decimal128Builder); ok && a.acc.kind == arrow.DECIMAL128 && db.Type().(*arrow.Decimal128Type).Scale == a.acc.scale {
		// A decimal sum at its own scale is the accumulator as it is (what
		// value's divRound returns): no conversion a group (the partial
		// sums of TPC-H q18's 1.5M orders, and their final ones).
		acc := &a.acc
		for i := range sel.Len() {
			g := sel.At(i)
			if acc.nn[g] <= 0 {
				db.AppendNull()
			} else {
				db.Append(acc.decs[g])
			}
		}
		return append(dst, b.NewArray()), nil
	}
	for i := range sel.Len() {
		g := sel.At(i)
		if a.acc.nn[g] <= 0 || a.acc.kind == 0 {
			b.AppendNull()
			continue
		}
		if err := a.acc.value(b, g, 1); err != nil {
			return nil, err
		}
	}
	return append(dst, b.NewArray()), nil
}

// avgAgg is avg(x): a sum and a count. The partial phase emits both (the sum as
// double, or as decimal(38, s) for a decimal input); the final phase reads them
// back (sumCol, countCol) and divides.
type avgAgg struct {
	sumCol   int
	countCol int // final phase only
	partial  bool
	acc      numAcc
	counts   []int64 // final phase: summed partial counts
}

func (a *avgAgg) memBytes() int64 { return a.acc.memBytes() + int64(cap(a.counts))*8 }

// release gives the sums back to their pools (see pooledAggregate).
func (a *avgAgg) release() { a.acc.release() }

func (a *avgAgg) width() int {
	if a.partial {
		return 2
	}
	return 1
}

func (a *avgAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	arr, err := inputColumn(rec, a.sumCol)
	if err != nil {
		return err
	}
	if err := a.acc.add(arr, gids, ngroups, signs); err != nil {
		return err
	}
	if a.countCol < 0 {
		return nil
	}
	carr, err := inputColumn(rec, a.countCol)
	if err != nil {
		return err
	}
	c, ok := carr.(*array.Int64)
	if !ok {
		return fmt.Errorf("hash_agg: partial avg count column is %s, want int64", carr.DataType())
	}
	a.counts = vector.GrowZero(a.counts, ngroups)
	valid, voff := vector.ValidityOf(carr)
	vals := c.Int64Values()
	for i, g := range gids {
		if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
			continue
		}
		if signs != nil && signs[i] < 0 {
			a.counts[g] -= vals[i]
		} else {
			a.counts[g] += vals[i]
		}
	}
	return nil
}

func (a *avgAgg) count(g int) int64 {
	if a.countCol >= 0 {
		return a.counts[g]
	}
	return a.acc.nn[g]
}

func (a *avgAgg) result(mem memory.Allocator, sel state.GroupSel, dts []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	end := sel.End()
	a.acc.grow(end)
	if a.countCol >= 0 {
		a.counts = vector.GrowZero(a.counts, end)
	}
	b := array.NewBuilder(mem, dts[0])
	defer b.Release()
	b.Reserve(sel.Len())
	for i := range sel.Len() {
		g := sel.At(i)
		n := a.count(g)
		if a.partial {
			// The partial sum: NULL when the group has no input.
			if a.acc.nn[g] <= 0 || a.acc.kind == 0 {
				b.AppendNull()
			} else if err := a.acc.value(b, g, 1); err != nil {
				return nil, err
			}
			continue
		}
		if n <= 0 || a.acc.kind == 0 {
			b.AppendNull()
			continue
		}
		if err := a.acc.value(b, g, n); err != nil {
			return nil, err
		}
	}
	dst = append(dst, b.NewArray())
	if a.partial {
		counts := make([]int64, sel.Len())
		for i := range counts {
			counts[i] = a.count(sel.At(i))
		}
		dst = append(dst, int64Column(mem, counts))
	}
	return dst, nil
}

package operators

// sum(DISTINCT x) and avg(DISTINCT x): the aggregate over a group's distinct
// values, with count(DISTINCT)'s table of (group, value) pairs deciding
// which rows reach it.

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// distinctAgg folds into inner a row whose value is new in its group (its
// first copy) and takes back from inner a row whose value leaves it (its
// last copy retracted); other rows change only seen's reference counts.
// NULLs are left to inner, which skips them. Only the complete phase has it.
type distinctAgg struct {
	seen  countDistinctAgg
	inner aggregate
	idx   []int32
	gids  []uint32
	signs []int8
}

func newDistinctAgg(col int, inner aggregate) *distinctAgg {
	return &distinctAgg{seen: countDistinctAgg{col: col}, inner: inner}
}

func (a *distinctAgg) width() int { return a.inner.width() }

func (a *distinctAgg) memBytes() int64 {
	return a.seen.memBytes() + a.inner.memBytes() + int64(cap(a.idx)+cap(a.gids))*4 + int64(cap(a.signs))
}

func (a *distinctAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	a.idx, a.gids, a.signs = a.idx[:0], a.gids[:0], a.signs[:0]
	err := a.seen.fold(rec, gids, ngroups, signs, func(row int, sign int8) {
		a.idx, a.gids, a.signs = append(a.idx, int32(row)), append(a.gids, gids[row]), append(a.signs, sign)
	})
	if err != nil {
		return err
	}
	if a.inner.inputType() == nil && a.seen.dt != nil {
		// The inner aggregate's state is of the input's type even while
		// every value was NULL, which seen does not pass on: a disk value
		// encodes the state by that type.
		if err := a.inner.setInputType(a.seen.dt); err != nil {
			return err
		}
	}
	if len(a.idx) == 0 {
		return nil
	}
	sub, err := vector.GatherRecord(memory.DefaultAllocator, rec, a.idx)
	if err != nil {
		return err
	}
	defer sub.Release()
	var subSigns []int8
	if signs != nil {
		subSigns = a.signs
	}
	return a.inner.update(sub, a.gids, ngroups, subSigns)
}

func (a *distinctAgg) result(mem memory.Allocator, sel state.GroupSel, dts []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	return a.inner.result(mem, sel, dts, dst)
}

// saveState writes seen's pairs under "seen." and inner's state beside them.
func (a *distinctAgg) saveState(w *aggStateWriter) error {
	prefix := w.prefix
	w.prefix = prefix + "seen."
	err := a.seen.saveState(w)
	w.prefix = prefix
	if err != nil {
		return err
	}
	return a.inner.saveState(w)
}

func (a *distinctAgg) loadState(r *aggStateReader) error {
	prefix := r.prefix
	r.prefix = prefix + "seen."
	err := a.seen.loadState(r)
	r.prefix = prefix
	if err != nil {
		return err
	}
	return a.inner.loadState(r)
}

package operators

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// minMaxRetractAgg is min(x) or max(x) over input that retracts
// (AggSpec.Retract: an aggregation over a join's or a stored table's
// changes), as Flink's retracting MIN and MAX keep every value: beside the
// extreme it keeps, as count(DISTINCT) does, each group's distinct values
// with a reference count. A retraction that takes a group's last copy of a
// value marks the group stale; before results are read, the stale groups'
// extremes are folded again from their values still referenced. Inserts fold
// into the extreme directly, so append-only input costs the value table and
// nothing more.
type minMaxRetractAgg struct {
	mm     minMaxAgg
	vals   countDistinctAgg
	stale  []bool
	nstale int
}

func (a *minMaxRetractAgg) width() int { return 1 }

func (a *minMaxRetractAgg) memBytes() int64 {
	return a.mm.memBytes() + a.vals.memBytes() + int64(cap(a.stale))
}

func (a *minMaxRetractAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	if err := a.vals.update(rec, gids, ngroups, signs); err != nil {
		return err
	}
	a.stale = vector.GrowZero(a.stale, ngroups)
	for i, s := range signs {
		if s < 0 && a.vals.refs[a.vals.ids[i]] == 0 && !a.stale[gids[i]] {
			a.stale[gids[i]] = true
			a.nstale++
		}
	}
	// A retracted value folds in harmlessly: either a copy of it remains,
	// or its group is stale and folded again.
	return a.mm.update(rec, gids, ngroups, nil)
}

// refresh folds the stale groups' extremes again from their values.
func (a *minMaxRetractAgg) refresh(mem memory.Allocator) error {
	if a.nstale == 0 {
		return nil
	}
	groups, cols, err := a.vals.table().DecodeGrouped(mem, []arrow.DataType{a.vals.dt})
	if err != nil {
		return err
	}
	defer vector.ReleaseArrays(cols)
	for g, s := range a.stale {
		if s {
			a.mm.has[g] = false
		}
	}
	var sel []int32
	var gids []uint32
	for p, g := range groups {
		if int(g) < len(a.stale) && a.stale[g] && a.vals.refs[p] > 0 {
			sel = append(sel, int32(p))
			gids = append(gids, g)
		}
	}
	clear(a.stale)
	a.nstale = 0
	if len(sel) == 0 {
		return nil
	}
	col, err := vector.GatherArray(mem, cols[0], sel)
	if err != nil {
		return err
	}
	defer col.Release()
	rec := arrow.NewSchema([]arrow.Field{{Name: "v", Type: a.vals.dt, Nullable: true}}, nil)
	r, err := vector.MakeRecord(rec, []arrow.Array{col}, len(sel))
	if err != nil {
		return err
	}
	defer r.Release()
	col0 := a.mm.col
	a.mm.col = 0 // the values alone
	err = a.mm.update(r, gids, len(a.stale), nil)
	a.mm.col = col0
	return err
}

func (a *minMaxRetractAgg) result(mem memory.Allocator, sel state.GroupSel, dts []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	if err := a.refresh(mem); err != nil {
		return nil, err
	}
	return a.mm.result(mem, sel, dts, dst)
}

// saveState writes the extremes (minMaxAgg's "value") and the values with
// their references (countDistinctAgg's "counts" and "pairs").
func (a *minMaxRetractAgg) saveState(w *aggStateWriter) error {
	if err := a.refresh(w.mem); err != nil {
		return err
	}
	if err := a.mm.saveState(w); err != nil {
		return err
	}
	return a.vals.saveState(w)
}

func (a *minMaxRetractAgg) loadState(r *aggStateReader) error {
	if err := a.mm.loadState(r); err != nil {
		return err
	}
	return a.vals.loadState(r)
}

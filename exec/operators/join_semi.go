package operators

// Semi and anti joins, kinds of hash_join: they tell, for each row of one
// side, whether some row of the other matches it (keys equal, none NULL, and
// Extra true of the pair), and emit that side's rows, once each, for which
// it does (semi) or does not (anti): EXISTS and NOT EXISTS decorrelated.
//
//   - "semi" and "anti" emit left (probe) rows as they probe: output, the
//     left columns.
//   - "right_semi" and "right_anti" emit right (build) rows once the left side
//     ended, as a right join emits its unmatched ones: output, the right
//     columns. The planner uses them to build on the side whose rows are
//     emitted when it is the smaller one (EXISTS over a big subquery).
//
// Extra, when set, reads the pair's left columns then its right columns, as in
// the other kinds.

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/vector"
)

// semiKind is which semi or anti join a hash_join is (0: none).
type semiKind int

const (
	leftSemi semiKind = iota + 1
	leftAnti
	rightSemi
	rightAnti
)

var semiKinds = map[string]semiKind{"semi": leftSemi, "anti": leftAnti, "right_semi": rightSemi, "right_anti": rightAnti}

// buildOutput reports whether the kind emits build (right) rows at the end.
func (k semiKind) buildOutput() bool { return k == rightSemi || k == rightAnti }

// probeSemi probes left batch b for a semi or anti join: ids holds each row's
// first right row of its key (-1: none), or is nil for a join without keys, where
// every right row is a candidate.
func (o *hashJoinOp) probeSemi(ctx context.Context, b exec.Batch, ids []int32, out exec.Collector) error {
	n := b.NumRows()
	nr := 0
	if o.build != nil {
		nr = int(o.build.NumRows())
		if o.rightMatched == nil && o.semi.buildOutput() {
			o.rightMatched = make([]bool, nr)
		}
	}
	var matched []bool // of the left rows, for a left semi or anti join
	if !o.semi.buildOutput() {
		matched = make([]bool, n)
	}
	li, ri := o.li[:0], o.ri[:0]
	defer func() { o.li, o.ri = li[:0], ri[:0] }()
	flush := func() error {
		if len(li) == 0 {
			return nil
		}
		err := o.markPairs(ctx, b, li, ri, matched)
		li, ri = li[:0], ri[:0]
		return err
	}
	// candidate takes the pair (i, r): marked at once without Extra, else
	// gathered for it. A pair whose side to mark is marked already is
	// skipped.
	candidate := func(i int, r int32) error {
		if matched != nil && matched[i] || matched == nil && o.rightMatched[r] {
			return nil
		}
		if o.extra == nil {
			if matched != nil {
				matched[i] = true
			} else {
				o.rightMatched[r] = true
			}
			return nil
		}
		li, ri = append(li, int32(i)), append(ri, r)
		if len(li) >= vector.OutBatchRows {
			return flush()
		}
		return nil
	}
	for i := 0; i < n && nr > 0; i++ {
		if ids == nil {
			for r := range nr {
				if err := candidate(i, int32(r)); err != nil {
					return err
				}
			}
			continue
		}
		for r := ids[i]; r >= 0; r = o.next[r] {
			if err := candidate(i, r); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if matched == nil {
		return nil // the build rows are emitted at the end
	}
	want := o.semi == leftSemi
	keep := make([]int32, 0, n)
	for i, m := range matched {
		if m == want {
			keep = append(keep, int32(i))
		}
	}
	switch len(keep) {
	case 0:
		return nil
	case n:
		return out.Collect(ctx, b)
	}
	rec, err := vector.GatherRecord(o.mem, b.Rec, keep)
	if err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	defer rec.Release()
	return out.Collect(ctx, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, keep)})
}

// markPairs evaluates Extra over the pairs of left rows li (of b) and right
// rows ri, and marks the pairs it is true of: their left rows in matched, or,
// when matched is nil, their right rows in rightMatched.
func (o *hashJoinOp) markPairs(ctx context.Context, b exec.Batch, li, ri []int32, matched []bool) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	cols, err := vector.GatherColumns(o.mem, nil, b.Rec.Columns(), li)
	if err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	if cols, err = vector.GatherColumns(o.mem, cols, o.build.Columns(), ri); err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	rec, err := vector.MakeRecord(o.pairs, cols, len(li))
	if err != nil {
		return fmt.Errorf("hash_join: %w", err)
	}
	defer rec.Release()
	res, err := expr.Eval(o.extra, rec, o.mem)
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
	o.sel = trueRows(cond, o.sel[:0])
	for _, j := range o.sel {
		if matched != nil {
			matched[li[j]] = true
		} else {
			o.rightMatched[ri[j]] = true
		}
	}
	return nil
}

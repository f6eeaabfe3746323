package expr

// An OR of selectors: each arm a selector or an AND of selectors (TPC-H
// q19's lineitem (l_quantity >= 1 AND l_quantity <= 11) OR ..., and its
// part's (p_brand = 'Brand#12' AND p_container IN (...) AND p_size <= 5) OR
// ...), evaluated as the union of the rows its arms keep, so that it too
// reads its columns only at the rows the conjuncts before kept.

import (
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
)

// anyOf keeps the rows some arm keeps, an arm keeping the rows all its
// selectors keep. It holds scratch memory: it evaluates one batch at a time.
type anyOf struct {
	arms    [][]Selector
	scratch []int32
	marks   []uint64 // a bit for each row of the batch some arm keeps
}

var _ Selector = (*anyOf)(nil)

// matchAnyOf returns e as an anyOf when e is an OR whose every arm is a
// selector or an AND of selectors.
func matchAnyOf(e *Expr) (*anyOf, bool) {
	if e.Kind != KindCall || e.Func != "or" || len(e.Args) < 2 {
		return nil, false
	}
	a := &anyOf{}
	for _, arm := range e.Args {
		if s, ok := MatchSelector(arm); ok {
			a.arms = append(a.arms, []Selector{s})
			continue
		}
		if arm.Kind != KindCall || arm.Func != "and" {
			return nil, false
		}
		var chain []Selector
		for _, c := range arm.Args {
			s, ok := MatchSelector(c)
			if !ok {
				return nil, false
			}
			chain = append(chain, s)
		}
		a.arms = append(a.arms, chain)
	}
	return a, true
}

func (a *anyOf) Reads(s *arrow.Schema) bool {
	for _, arm := range a.arms {
		for _, x := range arm {
			if !x.Reads(s) {
				return false
			}
		}
	}
	return true
}

func (a *anyOf) SelectAll(rec arrow.RecordBatch, sel []int32) []int32 {
	a.mark(rec, nil)
	for w, word := range a.marks {
		for word != 0 {
			sel = append(sel, int32(w*64+bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return sel
}

func (a *anyOf) Refine(rec arrow.RecordBatch, sel []int32) []int32 {
	a.mark(rec, sel)
	k := 0
	for _, i := range sel {
		sel[k] = i
		k += int(a.marks[i>>6] >> (i & 63) & 1)
	}
	return sel[:k]
}

// mark sets a.marks to the rows of rec (of sel; nil: all) some arm keeps.
func (a *anyOf) mark(rec arrow.RecordBatch, sel []int32) {
	words := (int(rec.NumRows()) + 63) / 64
	if cap(a.marks) < words {
		a.marks = make([]uint64, words)
	}
	a.marks = a.marks[:words]
	clear(a.marks)
	for _, arm := range a.arms {
		s, rest := a.scratch[:0], arm
		if sel == nil {
			s, rest = arm[0].SelectAll(rec, s), arm[1:]
		} else {
			s = append(s, sel...)
		}
		for _, x := range rest {
			s = x.Refine(rec, s)
		}
		for _, i := range s {
			a.marks[i>>6] |= 1 << (i & 63)
		}
		a.scratch = s[:0]
	}
}

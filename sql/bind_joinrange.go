package sql

import (
	"math"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// columnBounds is a range [lo, hi] of a column's int64 values, and the
// conditions that bound it.
type columnBounds struct {
	lo, hi int64
	conds  []int // indexes into the conditions
}

// rangeFactor estimates, for the BIGINT, DATE and TIMESTAMP columns that
// conditions conds compare with constants (<, <=, >, >=), the fraction of
// rows in the range the conditions leave, from the catalog's sample of each
// column (RangeEstimator): o_orderdate >= DATE '1993-08-01' AND o_orderdate
// < DATE '1993-11-01' keeps 3 of TPC-H's 79 months of orders, where two
// conditions guessed at a third each would keep a ninth. It returns the
// product of the fractions of the columns it could estimate, and the
// conditions that product stands for (the others keep their guessed
// selectivity); column gives the table and column of an input position (ok
// false: not a table's column).
func rangeFactor(cat any, conds []*expr.Expr, column func(pos int) (*Table, int, bool)) (factor float64, used map[int]bool) {
	factor = 1
	re, ok := cat.(RangeEstimator)
	if !ok {
		return factor, nil
	}
	bounds := map[int]*columnBounds{} // by input position
	var positions []int               // in the order met, for a stable product
	for i, c := range conds {
		pos, lo, hi, ok := constantBound(foldExpr(c))
		if !ok {
			continue
		}
		cb := bounds[pos]
		if cb == nil {
			cb = &columnBounds{lo: math.MinInt64, hi: math.MaxInt64}
			bounds[pos] = cb
			positions = append(positions, pos)
		}
		cb.lo, cb.hi = max(cb.lo, lo), min(cb.hi, hi)
		cb.conds = append(cb.conds, i)
	}
	for _, pos := range positions {
		cb := bounds[pos]
		t, col, ok := column(pos)
		if !ok || cb.lo > cb.hi {
			continue
		}
		f, ok := re.EstimateRange(t, col, cb.lo, cb.hi)
		if !ok {
			continue
		}
		factor *= f
		if used == nil {
			used = map[int]bool{}
		}
		for _, i := range cb.conds {
			used[i] = true
		}
	}
	return factor, used
}

// scanColumn returns the table and column of column col of scan s.
func scanColumn(s *Scan, col int) (*Table, int, bool) {
	if s.Columns != nil {
		if col >= len(s.Columns) {
			return nil, 0, false
		}
		col = s.Columns[col]
	}
	return s.Table, col, true
}

// constantBound returns the range [lo, hi] of column pos's int64 values
// (BIGINT, DATE, TIMESTAMP) that c, a comparison of the column with a
// constant of its type, keeps.
func constantBound(c *expr.Expr) (pos int, lo, hi int64, ok bool) {
	if c.Kind != expr.KindCall || len(c.Args) != 2 {
		return 0, 0, 0, false
	}
	fn, col, lit := c.Func, c.Args[0], c.Args[1]
	if col.Kind == expr.KindLiteral {
		fn, col, lit = flipComparison(fn), lit, col
	}
	if col.Kind != expr.KindColumn || lit.Kind != expr.KindLiteral || lit.Value.Null || lit.Type.ID != col.Type.ID {
		return 0, 0, 0, false
	}
	switch col.Type.ID {
	case types.Int64, types.Date, types.Timestamp:
	default:
		return 0, 0, 0, false
	}
	v := lit.Value.Int
	lo, hi = math.MinInt64, math.MaxInt64
	switch {
	case fn == "<=":
		hi = v
	case fn == ">=":
		lo = v
	case fn == "<" && v > math.MinInt64:
		hi = v - 1
	case fn == ">" && v < math.MaxInt64:
		lo = v + 1
	default:
		return 0, 0, 0, false
	}
	return col.Col, lo, hi, true
}

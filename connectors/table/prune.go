package table

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Segment pruning: each segment records the range of its bigint, timestamp
// and date columns' values, and a scan skips the segments that its query's
// filter (exec.ConnectorSpec.Filter) rules out by those ranges alone, from
// its conjuncts of the form column <op> constant. Rows inserted in key order
// (ids, dates) make a point or range lookup read only the segments that can
// hold it.

// valueRange is the least and greatest non-NULL value of a column.
type valueRange struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// widenRanges widens ranges (nil: none yet) by rec's values.
func widenRanges(ranges []*valueRange, rec arrow.RecordBatch) []*valueRange {
	if ranges == nil {
		ranges = make([]*valueRange, rec.NumCols())
	}
	for c, col := range rec.Columns() {
		var vals []int64
		switch a := col.(type) {
		case *array.Int64:
			vals = a.Int64Values()
		case *array.Timestamp:
			raw := a.TimestampValues()
			vals = make([]int64, len(raw))
			for i, v := range raw {
				vals[i] = int64(v)
			}
		default:
			continue
		}
		r := ranges[c]
		for i, v := range vals {
			if col.IsNull(i) {
				continue
			}
			if r == nil {
				r = &valueRange{Min: v, Max: v}
				continue
			}
			r.Min, r.Max = min(r.Min, v), max(r.Max, v)
		}
		ranges[c] = r
	}
	return ranges
}

// mayMatch reports whether a segment with these ranges may hold a row that
// satisfies cond (over the table's columns): false only when a conjunct
// column <op> constant cannot hold for any value in the column's range (a
// segment without a range for the column may).
func mayMatch(cond *expr.Expr, ranges []*valueRange) bool {
	if cond == nil || ranges == nil {
		return true
	}
	if cond.Kind == expr.KindCall && cond.Func == "and" {
		for _, a := range cond.Args {
			if !mayMatch(a, ranges) {
				return false
			}
		}
		return true
	}
	if cond.Kind != expr.KindCall || len(cond.Args) != 2 {
		return true
	}
	op, col, lit := cond.Func, cond.Args[0], cond.Args[1]
	if col.Kind == expr.KindLiteral && lit.Kind == expr.KindColumn {
		col, lit = lit, col
		switch op { // constant <op> column: the column's side of it
		case "<":
			op = ">"
		case "<=":
			op = ">="
		case ">":
			op = "<"
		case ">=":
			op = "<="
		}
	}
	if col.Kind != expr.KindColumn || lit.Kind != expr.KindLiteral || col.Col < 0 || col.Col >= len(ranges) {
		return true
	}
	r := ranges[col.Col]
	v, ok := rangeValue(lit.Value, col.Type)
	if r == nil || !ok {
		return true
	}
	switch op {
	case "=":
		return r.Min <= v && v <= r.Max
	case "<":
		return r.Min < v
	case "<=":
		return r.Min <= v
	case ">":
		return r.Max > v
	case ">=":
		return r.Max >= v
	}
	return true
}

// rangeValue is a constant as the ranges of a column of type t hold it: the
// constant must have the column's type (the binder casts it to it).
func rangeValue(v types.Value, t types.Type) (int64, bool) {
	if v.Null || v.Type.Base() != t.Base() {
		return 0, false
	}
	switch t.ID {
	case types.Int64, types.Timestamp, types.Date:
		return v.Int, true
	}
	return 0, false
}

package planner

import (
	"fmt"
	"math"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// intervalBounds finds in join p's condition (inner or outer) an interval join's
// (Flink's): comparisons between a time with a watermark of each side, each
// maybe plus or minus an interval (a.ts BETWEEN b.ts - INTERVAL '10' SECOND
// AND b.ts, or with >=, >, <=, <), bounding the left time less the right one
// from below and from above. It reports the bounds of the first pair of
// time columns so compared on both sides.
func intervalBounds(p *sql.Join) (operators.IntervalBounds, bool) {
	switch p.Kind {
	case sql.InnerJoin, sql.LeftJoin, sql.FullJoin: // RIGHT JOIN binds as LEFT, its sides swapped
	default:
		return operators.IntervalBounds{}, false
	}
	if len(p.LeftKeys) == 0 || p.Extra == nil {
		return operators.IntervalBounds{}, false
	}
	nl := len(p.Left.Schema())
	// side returns e as a time column of one side plus a constant.
	side := func(e *expr.Expr) (col int, left bool, off int64, ok bool) {
		if e.Kind == expr.KindCall && e.Func == "$add_micros" && len(e.Args) == 2 &&
			e.Args[1].Kind == expr.KindLiteral && !e.Args[1].Value.Null && e.Args[1].Value.Type.ID == types.Int64 {
			off, e = e.Args[1].Value.Int, e.Args[0]
		}
		if e.Kind != expr.KindColumn || e.Type.ID != types.Timestamp {
			return 0, false, 0, false
		}
		if e.Col < nl {
			return e.Col, true, off, eventTime(p.Left, e.Col)
		}
		return e.Col - nl, false, off, eventTime(p.Right, e.Col-nl)
	}
	iv := operators.IntervalBounds{LeftTime: -1, RightTime: -1, Lo: math.MinInt64, Hi: math.MaxInt64}
	var walk func(e *expr.Expr)
	walk = func(e *expr.Expr) {
		if e.Kind != expr.KindCall {
			return
		}
		if e.Func == "and" {
			for _, a := range e.Args {
				walk(a)
			}
			return
		}
		op := e.Func
		if len(e.Args) != 2 || op != ">=" && op != ">" && op != "<=" && op != "<" {
			return
		}
		c1, l1, o1, ok1 := side(e.Args[0])
		c2, l2, o2, ok2 := side(e.Args[1])
		if !ok1 || !ok2 || l1 == l2 {
			return
		}
		// l + o1 op r + o2, so l - r op o2 - o1; or r + o1 op l + o2, so
		// l - r (op reversed) o1 - o2.
		lc, rc, c := c1, c2, o2-o1
		if !l1 {
			lc, rc, c = c2, c1, o1-o2
			op = map[string]string{">=": "<=", ">": "<", "<=": ">=", "<": ">"}[op]
		}
		if iv.LeftTime >= 0 && (iv.LeftTime != lc || iv.RightTime != rc) {
			return
		}
		iv.LeftTime, iv.RightTime = lc, rc
		switch op {
		case ">=":
			iv.Lo = max(iv.Lo, c)
		case ">":
			iv.Lo = max(iv.Lo, c+1)
		case "<=":
			iv.Hi = min(iv.Hi, c)
		case "<":
			iv.Hi = min(iv.Hi, c-1)
		}
	}
	walk(p.Extra)
	ok := iv.LeftTime >= 0 && iv.Lo != math.MinInt64 && iv.Hi != math.MaxInt64 && iv.Lo <= iv.Hi
	return iv, ok
}

// intervalJoin plans join p of two streams of rows only inserted, whose
// condition bounds the difference of their times (intervalBounds), as kind
// "interval_join": keyed like a stream_join, but each side's rows go once
// the other side's watermark leaves them out of reach, an outer join's
// unmatched ones NULL-padded then; its output is append-only.
func (b *builder) intervalJoin(p *sql.Join, left, right int, iv operators.IntervalBounds) int {
	cfg := operators.StreamJoinConfig{Kind: p.Kind.String(), LeftKeys: p.LeftKeys, RightKeys: p.RightKeys,
		Extra: p.Extra, Left: p.Left.Schema(), Right: p.Right.Schema(), Interval: &iv, StateBackend: b.opts.StateBackend}
	label := fmt.Sprintf("interval_join %s on %s and %s (left %s - right %s within [%s, %s])", p.Kind, joinKeys(p), p.Extra,
		p.Left.Schema()[iv.LeftTime].Name, p.Right.Schema()[iv.RightTime].Name, micros(iv.Lo), micros(iv.Hi))
	if b.opts.StateBackend != "" {
		label += " state_backend=" + b.opts.StateBackend
	}
	op := exec.OperatorSpec{Kind: "interval_join", Label: label, Config: exec.MustConfig(cfg), Out: p.Out}
	return b.add(op, b.opts.Parallelism, 0, in(left, exec.Hash, p.LeftKeys...), in(right, exec.Hash, p.RightKeys...))
}

// micros is a signed number of microseconds as a duration.
func micros(us int64) string {
	return fmt.Sprint(time.Duration(us) * time.Microsecond)
}

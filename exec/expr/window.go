package expr

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/types"
)

// Windows of event time, aligned to the epoch as Flink's are
// (sql/dialect_window.go writes Flink's window forms with these), sizes and
// steps in microseconds:
//
//	tumble_start(ts, size)              the start of the tumbling window holding ts
//	tumble_end(ts, size)                its end (exclusive): the start plus size
//	hop_first(ts, slide, size)          the start of the first hopping window
//	                                    holding ts: windows start every slide
//	cumulate_first_end(ts, step, size)  the end of the first cumulating window
//	                                    holding ts: windows start every size and
//	                                    grow by step up to size
//	session_start(ts, gap)              the session of ts alone: ts ...
//	session_end(ts, gap)                ... to ts + gap, which a session_agg
//	                                    operator merges with its neighbours

// evalWindow is the functions above.
func evalWindow(c *call) (arrow.Array, error) {
	ts, a := int64Arg(c.args[0]), int64Arg(c.args[1])
	var b vals[int64]
	if len(c.args) > 2 {
		b = int64Arg(c.args[2])
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		t, x := ts.at(i), a.at(i)
		var y int64
		if len(c.args) > 2 {
			y = b.at(i)
		}
		if x <= 0 || len(c.args) > 2 && y <= 0 {
			data.Release()
			releaseBuffer(valid)
			return nil, newError(ErrInvalidArgument, "%s: a window's size and slide must be positive", c.e.Func)
		}
		switch c.e.Func {
		case "tumble_start":
			out[i] = floorDiv64(t, x) * x
		case "tumble_end":
			out[i] = floorDiv64(t, x)*x + x
		case "hop_first": // the first k with k*slide <= t < k*slide + size
			out[i] = (floorDiv64(t-y, x) + 1) * x
		case "session_start":
			out[i] = t
		case "session_end":
			out[i] = t + x
		case "cumulate_first_end":
			start := floorDiv64(t, y) * y
			out[i] = start + (floorDiv64(t-start, x)+1)*x
		}
	}
	return finish(types.TimestampType.Arrow(), c.n, nulls, valid, data), nil
}

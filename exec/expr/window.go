package expr

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/types"
)

// Windows of event time (sql/dialect_window.go writes Flink's forms as these
// calls): tumble_start(ts, size) is the start of the tumbling window of size
// microseconds that holds ts, windows being aligned to the epoch as Flink's
// are; tumble_end(ts, size) is its end, the start plus size (exclusive).

// evalTumble is tumble_start(ts, size) and tumble_end(ts, size).
func evalTumble(c *call) (arrow.Array, error) {
	ts, size := int64Arg(c.args[0]), int64Arg(c.args[1])
	end := c.e.Func == "tumble_end"
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		s := size.at(i)
		if s <= 0 {
			data.Release()
			releaseBuffer(valid)
			return nil, newError(ErrInvalidArgument, "%s: the window size must be positive, not %d microseconds", c.e.Func, s)
		}
		out[i] = floorDiv64(ts.at(i), s) * s
		if end {
			out[i] += s
		}
	}
	return finish(types.TimestampType.Arrow(), c.n, nulls, valid, data), nil
}

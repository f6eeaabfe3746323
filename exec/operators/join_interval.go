package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// IntervalBounds makes a stream_join an interval join (kind
// "interval_join", Flink's): the left row's time (column LeftTime of the
// left side, a timestamp with a watermark) less the right row's (RightTime)
// lies within [Lo, Hi] microseconds for every pair Extra lets through. Extra
// still decides which pairs match; the bounds say when a held row can match
// no later row of the other side, whose rows come after its watermark.
type IntervalBounds struct {
	LeftTime  int   `json:"left_time"`
	RightTime int   `json:"right_time"`
	Lo        int64 `json:"lo"`
	Hi        int64 `json:"hi"`
}

var _ exec.PerInputWatermarks = (*streamJoinOp)(nil)

// newIntervalJoinOp builds kind "interval_join": an inner stream_join of two
// inputs whose rows are only inserted (StreamJoinConfig.Interval set). Each
// held row keeps its time (in the place a regular join keeps its time of
// last write), and a watermark of one side drops the other side's rows it
// puts out of reach: a left row at tl when the right watermark reaches
// tl - Lo (a later right row, after the watermark, is too late for it), a
// right row at tr when the left one reaches tr + Hi; a side's end drops
// every row of the other. Rows without a time never match, and go at the
// first watermark. A LEFT, RIGHT or FULL one sends a preserved side's row
// that matched nothing, NULL-padded, when it goes (Flink's): not before, as
// a regular join does, so as not to retract it. Its output is append-only,
// and its watermark, the least
// of its inputs', is held back by the most a pair's times can lie behind
// it (max(Hi, -Lo, 0)), as Flink's, so a window downstream does not find
// the pairs late.
func newIntervalJoinOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg StreamJoinConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("interval_join: bad config: %w", err)
	}
	iv := cfg.Interval
	if iv == nil || iv.Lo > iv.Hi || cfg.TTLMillis != 0 {
		return nil, fmt.Errorf("interval_join: bounds Lo <= Hi and no TTL")
	}
	if iv.LeftTime < 0 || iv.LeftTime >= len(cfg.Left) || iv.RightTime < 0 || iv.RightTime >= len(cfg.Right) {
		return nil, fmt.Errorf("interval_join: time columns %d and %d out of range", iv.LeftTime, iv.RightTime)
	}
	op, err := newStreamJoinOp(spec)
	if err != nil {
		return nil, err
	}
	o := op.(*streamJoinOp)
	o.in.delay = max(iv.Hi, -iv.Lo, 0)
	return o, nil
}

// stampTimes sets the time of the held rows of batch rec from input s to
// their event time.
func (o *streamJoinOp) stampTimes(s int, rec arrow.RecordBatch) {
	col := o.cfg.Interval.LeftTime
	if s == 1 {
		col = o.cfg.Interval.RightTime
	}
	me := o.side[s]
	ts := rec.Column(col).(*array.Timestamp)
	for i := range int(rec.NumRows()) {
		t := int64(math.MinInt64)
		if ts.IsValid(i) {
			t = int64(ts.Value(i))
		}
		me.touched[me.rowIDs[i]] = t
	}
}

// intervalExpire drops the rows no later row of the other side can match;
// of an outer join's preserved side, those that matched none go out
// NULL-padded.
// On the disk backend the rows the DB holds that go are loaded into the
// cache first, some keys at a time (intervalLoad), and dropped there; the
// keys changed are written back when the cache outgrows its bound.
func (o *streamJoinOp) intervalExpire(ctx context.Context, out exec.Collector) error {
	if o.disk == nil {
		return o.expireCached(ctx, out)
	}
	for {
		more, err := o.intervalLoad()
		if err == nil {
			err = o.expireCached(ctx, out)
		}
		if err == nil {
			err = o.evictIfFull()
		}
		if err != nil || !more {
			return err
		}
	}
}

// expireCached is intervalExpire over the rows the sides hold (on the disk
// backend, those cached).
func (o *streamJoinOp) expireCached(ctx context.Context, out exec.Collector) error {
	var unmatched [2][]int32
	iv := o.cfg.Interval
	for s, sd := range o.side {
		wm, ok := o.intervalMark(1 - s)
		if !ok {
			continue
		}
		for g := range sd.count {
			if sd.count[g] == 0 {
				continue
			}
			t := sd.touched[g]
			if t == math.MinInt64 || o.reach(s, t, iv) <= wm {
				if o.outer[s] && sd.matches[g] == 0 {
					for range sd.count[g] {
						unmatched[s] = append(unmatched[s], int32(g))
					}
				}
				if o.disk != nil {
					o.disk.change(s, sd.rowKey[g])
				}
				sd.drop(uint32(g))
			}
		}
	}
	for s, ids := range unmatched {
		for lo := 0; lo < len(ids); lo += vector.OutBatchRows {
			if err := o.emitUnmatched(ctx, s, ids[lo:min(len(ids), lo+vector.OutBatchRows)], out); err != nil {
				return err
			}
		}
	}
	return nil
}

// intervalMark is the watermark of input s, math.MaxInt64 once it ended;
// false before its first.
func (o *streamJoinOp) intervalMark(s int) (int64, bool) {
	switch {
	case o.in.ended[s]:
		return math.MaxInt64, true
	case o.in.wmSeen[s]:
		return o.in.wm[s], true
	}
	return 0, false
}

// reach is the last time of the other side a row of side s at time t can
// match: left rows reach right times up to t - Lo, right rows left times up
// to t + Hi; saturating.
func (o *streamJoinOp) reach(s int, t int64, iv *IntervalBounds) int64 {
	if s == 0 {
		return satAdd(t, -iv.Lo)
	}
	return satAdd(t, iv.Hi)
}

// emitUnmatched sends rows ids of side s beside NULLs, as they are dropped:
// drop keeps a row's encoding, which only compact, between batches, frees.
func (o *streamJoinOp) emitUnmatched(ctx context.Context, s int, ids []int32, out exec.Collector) error {
	other := o.side[1-s]
	cols := make([]arrow.Array, len(other.types))
	for c, dt := range other.types {
		cols[c] = array.MakeArrayOfNull(o.mem, dt, 0)
	}
	empty := array.NewRecordBatch(other.schema, cols, 0)
	vector.ReleaseArrays(cols)
	defer empty.Release()
	in := make([]int32, len(ids))
	for i := range in {
		in[i] = -1
	}
	r, err := o.pairRecord(1-s, empty, in, ids)
	if err != nil {
		return err
	}
	defer r.Release()
	return out.Collect(ctx, exec.Batch{Rec: r})
}

// satAdd is a + b, held within int64.
func satAdd(a, b int64) int64 {
	c := a + b
	switch {
	case b > 0 && c < a:
		return math.MaxInt64
	case b < 0 && c > a:
		return math.MinInt64
	}
	return c
}

// PerInputWatermarks asks an interval join's task for each input's
// watermark apart: one side's rows go by the other side's.
func (o *streamJoinOp) PerInputWatermarks() bool { return o.cfg.Interval != nil }

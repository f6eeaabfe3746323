package kafka

import (
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
)

// The watermarks of a table with a WATERMARK (exec.ConnectorSpec.Watermark):
// each partition's is the largest value of the watermark expression over its
// records, and the source subtask's the least over its partitions, so that
// one partition running ahead of the others does not make their records late
// (Flink's per-partition watermarks). A partition that has had no record for
// idle_timeout holds none back until its next; with idle_timeout 0s one
// without records holds the watermark back for good. When no partition holds
// any back, the subtask says it is idle (exec.Idle).

// partitionMarks tracks the watermarks of one subtask's partitions.
type partitionMarks struct {
	expr    *expr.Expr
	idle    time.Duration
	start   time.Time
	parts   []int
	high    map[int]int64     // by partition: the largest value so far
	seen    map[int]time.Time // by partition: when its last record came
	emitted int64             // the last watermark emitted; math.MinInt64 before
	isIdle  bool              // Idle was emitted since the last watermark
}

func newPartitionMarks(e *expr.Expr, idle time.Duration, parts []int, now time.Time) *partitionMarks {
	return &partitionMarks{expr: e, idle: idle, start: now, parts: parts, high: map[int]int64{}, seen: map[int]time.Time{}, emitted: math.MinInt64}
}

// observe takes in the watermark expression's values over rec, whose row i
// came from partition rowPart[i].
func (w *partitionMarks) observe(rec arrow.RecordBatch, rowPart []int, mem memory.Allocator, now time.Time) error {
	res, err := expr.Eval(w.expr, rec, mem)
	if err != nil {
		return err
	}
	defer res.Release()
	ts, ok := res.(*array.Timestamp)
	for i, p := range rowPart {
		w.seen[p] = now
		if !ok || ts.IsNull(i) {
			continue
		}
		if h, had := w.high[p]; !had || int64(ts.Value(i)) > h {
			w.high[p] = int64(ts.Value(i))
		}
	}
	return nil
}

// signal returns the watermark or idleness to emit now, if it changed.
func (w *partitionMarks) signal(now time.Time) (exec.Signal, bool) {
	low, active := int64(math.MaxInt64), 0
	for _, p := range w.parts {
		last, ok := w.seen[p]
		if !ok {
			last = w.start
		}
		if w.idle > 0 && now.Sub(last) >= w.idle {
			continue // idle: holds none back
		}
		active++
		h, ok := w.high[p]
		if !ok {
			return exec.Signal{}, false // no record yet: it holds the watermark back
		}
		low = min(low, h)
	}
	switch {
	case active == 0 && !w.isIdle:
		w.isIdle = true
		return exec.Signal{Kind: exec.Idle}, true
	case active == 0:
		return exec.Signal{}, false
	case low > w.emitted || w.isIdle:
		w.emitted, w.isIdle = max(w.emitted, low), false
		return exec.Signal{Kind: exec.Watermark, Watermark: w.emitted}, true
	}
	return exec.Signal{}, false
}

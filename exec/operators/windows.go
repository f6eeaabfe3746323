package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// windowed is what window_agg, window_topn and window_join share: one bounded operator
// per window of event time that is open, by the window's end (exclusive),
// the watermark, and the rule that a window closes when the watermark
// reaches its last microsecond (Flink's maxTimestamp, end - 1). W is the
// per-window operator: a bounded hash_agg, topn or hash_join, which emits its
// rows at end of stream, or on the disk backend a spoolWin in front of one
// (window_spool.go).
type windowed[W interface {
	exec.Operator
	exec.Checkpointed
}] struct {
	what string // the operator kind, for errors
	open func(ctx context.Context, tc *exec.TaskContext, end int64) (W, error)
	tc   *exec.TaskContext
	mem  memory.Allocator
	// lateCfg, set by the operator before Open, sends its late rows on.
	lateCfg *LateConfig
	late    lateRows
	wins    map[int64]W
	mark    int64 // the watermark; math.MinInt64 before the first
	byEnd   map[int64][]int32
}

func newWindowed[W interface {
	exec.Operator
	exec.Checkpointed
}](what string, open func(ctx context.Context, tc *exec.TaskContext, end int64) (W, error)) windowed[W] {
	return windowed[W]{what: what, open: open, wins: map[int64]W{}, mark: math.MinInt64}
}

// start takes the task's allocator and metrics, at Open.
func (s *windowed[W]) start(tc *exec.TaskContext) {
	s.tc = tc
	s.mem = vector.TaskAlloc(tc)
	s.late = newLateRows(s.lateCfg, tc)
}

// EmitsLate reports whether the operator sends its late rows on.
func (s *windowed[W]) EmitsLate() bool { return s.lateCfg != nil }

// closed reports whether the window ending at end has closed.
func (s *windowed[W]) closed(end int64) bool { return end-1 <= s.mark }

// window returns the operator of the window ending at end, opening it.
func (s *windowed[W]) window(ctx context.Context, end int64) (W, error) {
	if w, ok := s.wins[end]; ok {
		return w, nil
	}
	w, err := s.open(ctx, s.tc, end)
	if err != nil {
		return w, err
	}
	s.wins[end] = w
	return w, nil
}

// route hands each open window its rows of b, whose column col is the
// window's end, in order of the ends; rows of closed windows (or without
// one, a NULL end) are late: dropped, counted and sent to the late output.
func (s *windowed[W]) route(ctx context.Context, b exec.Batch, col int, take func(w W, b exec.Batch) error) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	ends, ok := b.Rec.Column(col).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("%s: the window's end is %s, not a timestamp", s.what, b.Rec.Column(col).DataType())
	}
	vals := ends.TimestampValues()
	// The usual batch: every row in one open window.
	first := int64(vals[0])
	same := ends.NullN() == 0 && !s.closed(first)
	for i := 1; same && i < n; i++ {
		same = int64(vals[i]) == first
	}
	if same {
		w, err := s.window(ctx, first)
		if err != nil {
			return err
		}
		return take(w, b)
	}
	if s.byEnd == nil {
		s.byEnd = map[int64][]int32{}
	}
	clear(s.byEnd)
	var late []int32
	for i := range n {
		e := int64(vals[i])
		if ends.IsNull(i) || s.closed(e) {
			late = append(late, int32(i))
			continue
		}
		s.byEnd[e] = append(s.byEnd[e], int32(i))
	}
	if err := s.late.emit(ctx, b, late, s.mark); err != nil {
		return err
	}
	for _, e := range slices.Sorted(maps.Keys(s.byEnd)) {
		w, err := s.window(ctx, e)
		if err != nil {
			return err
		}
		idx := s.byEnd[e]
		rec, err := vector.GatherRecord(s.mem, b.Rec, idx)
		if err != nil {
			return err
		}
		err = take(w, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, idx)})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// advance takes watermark mark (math.MaxInt64: the end of input) and ends
// the operators of the windows that closed, in order of their ends, with
// finish, their rows going to out; it returns false when mark is not news.
func (s *windowed[W]) advance(ctx context.Context, mark int64, out exec.Collector, finish func(w W, rows exec.Collector) error) (bool, error) {
	if mark <= s.mark {
		return false, nil
	}
	s.mark = mark
	var ends []int64
	for e := range s.wins {
		if s.closed(e) {
			ends = append(ends, e)
		}
	}
	slices.Sort(ends)
	rows := rowsOnly{out}
	for _, e := range ends {
		w := s.wins[e]
		delete(s.wins, e)
		err := finish(w, rows)
		w.Close(ctx)
		if err != nil {
			return true, err
		}
	}
	return true, nil
}

// signal takes a signal of a one-input windowed operator whose windows'
// operators emit their rows at their end of stream: a watermark, or the end
// of input, ends the windows it closes; a watermark that is not news goes no
// further, and every other signal goes on.
func (s *windowed[W]) signal(ctx context.Context, sig exec.Signal, out exec.Collector) error {
	return s.signalWith(ctx, sig, out, func(w W, rows exec.Collector) error {
		return w.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, rows)
	})
}

// signalWith is signal ending each window that closes with finish.
func (s *windowed[W]) signalWith(ctx context.Context, sig exec.Signal, out exec.Collector, finish func(w W, rows exec.Collector) error) error {
	mark := int64(math.MinInt64)
	switch sig.Kind {
	case exec.Watermark:
		mark = sig.Watermark
	case exec.EndOfStream:
		mark = math.MaxInt64
	}
	if mark > math.MinInt64 {
		news, err := s.advance(ctx, mark, out, finish)
		if err != nil || !news && sig.Kind == exec.Watermark {
			return err
		}
	}
	return out.CollectSignal(ctx, sig)
}

// rowsOnly passes batches on and drops signals: a window's operator ends
// with an end of stream that is not the operator's.
type rowsOnly struct{ exec.Collector }

func (rowsOnly) CollectSignal(context.Context, exec.Signal) error { return nil }

// closeAll releases every window's operator.
func (s *windowed[W]) closeAll(ctx context.Context) {
	for e, w := range s.wins {
		w.Close(ctx)
		delete(s.wins, e)
	}
}

// windowsState is what the snapshot of a windowed operator holds, as JSON:
// the watermark, and each open window's operator's state.
type windowsState struct {
	Mark    int64         `json:"mark"`
	Windows []windowState `json:"windows"`
}

type windowState struct {
	End   int64  `json:"end"`
	State []byte `json:"state"`
}

func (s *windowed[W]) snapshot(ctx context.Context, checkpoint int64) ([]byte, error) {
	st := windowsState{Mark: s.mark}
	for _, e := range slices.Sorted(maps.Keys(s.wins)) {
		b, err := s.wins[e].SnapshotState(ctx, checkpoint)
		if err != nil {
			return nil, err
		}
		st.Windows = append(st.Windows, windowState{End: e, State: b})
	}
	return json.Marshal(st)
}

func (s *windowed[W]) restore(ctx context.Context, data []byte) error {
	var st windowsState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s: bad checkpoint state: %w", s.what, err)
	}
	s.mark = st.Mark
	for _, ws := range st.Windows {
		w, err := s.window(ctx, ws.End)
		if err != nil {
			return err
		}
		if err := w.RestoreState(ctx, ws.State); err != nil {
			return err
		}
	}
	return nil
}

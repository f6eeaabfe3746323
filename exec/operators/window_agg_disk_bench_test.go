package operators

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// TestWindowAggBackendThroughput compares the backends on a tumbling window
// aggregation (count(*), sum(x) GROUP BY k, window_end): HUMMER_STATE_WIN_KEYS
// keys (default 2^18) per window, each seen twice per window in batches of
// 4096 scattered over the key space, 8 windows, each closed by the watermark
// once the next one's rows are in (two windows open at a time). Three runs
// each: memory; disk within 256 MiB of state memory, whose cache holds both
// windows; and disk within HUMMER_STATE_WIN_MEMORY (default 16 MiB, a 4 MiB
// cache) which they outgrow, so that it evicts to pebble and closes windows
// from it. HUMMER_STATE_REPS runs of each, in turn. Every run's rows are
// checked: one per key and window, their counts adding up to the rows.
func TestWindowAggBackendThroughput(t *testing.T) {
	if os.Getenv("HUMMER_STATE_WIN_KEYS") == "" {
		t.Skip("HUMMER_STATE_WIN_KEYS not set: a benchmark")
	}
	vector.PoisonSlices = false
	keys := benchEnv(t, "HUMMER_STATE_WIN_KEYS", 1<<18)
	small := benchEnv(t, "HUMMER_STATE_WIN_MEMORY", 16<<20)
	reps := benchEnv(t, "HUMMER_STATE_REPS", 3)
	const windows = 8
	const width = int64(10 * time.Second / time.Microsecond)
	mem := memory.NewGoAllocator()
	perWindow := 2 * keys / benchBatch
	batches := make([]arrow.RecordBatch, perWindow)
	for i := range batches {
		batches[i] = benchKeys(mem, int64(i)*benchBatch, 7919, keys)
	}
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	rows := float64(windows * perWindow * benchBatch)
	type run struct {
		name   string
		memory int64
	}
	runs := []run{{StateMemory, 0}, {StateDisk, 256 << 20}, {"disk_small", small}}
	walls := map[string][]float64{}
	evictions, closes := 0, 0
	for r := range reps {
		for i := range runs {
			rn := runs[(int(r)+i)%len(runs)]
			cfg := WindowAggConfig{End: 1, Agg: HashAggConfig{GroupBy: []int{0, 2}, Aggs: []AggSpec{
				{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "sum", Arg: 1, Type: aggTestDec0}}}}
			if rn.memory > 0 {
				cfg.Agg.StateBackend = StateDisk
			}
			out := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "window_end", Type: types.TimestampType},
				{Name: "n", Type: types.Int64Type}, {Name: "s", Type: aggTestDec0}}
			op := opTestNew(t, "window_agg", cfg, out).(*windowAggOp)
			ctx := context.Background()
			if err := op.Open(ctx, &exec.TaskContext{Alloc: mem, StateMemory: rn.memory, SpillDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			sink := &winBenchSink{}
			start := time.Now()
			for w := range int64(windows) {
				end := make([]arrow.Array, 1)
				eb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
				eb.Reserve(benchBatch)
				for range benchBatch {
					eb.UnsafeAppend(arrow.Timestamp((w + 1) * width))
				}
				end[0] = eb.NewArray()
				eb.Release()
				for _, b := range batches {
					rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64},
						{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "window_end", Type: end[0].DataType()}}, nil),
						[]arrow.Array{b.Column(0), b.Column(1), end[0]}, benchBatch)
					err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, sink)
					rec.Release()
					if err != nil {
						t.Fatal(err)
					}
				}
				end[0].Release()
				// The window before this one closes.
				if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: w*width - 1}, sink); err != nil {
					t.Fatal(err)
				}
			}
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, sink); err != nil {
				t.Fatal(err)
			}
			walls[rn.name] = append(walls[rn.name], time.Since(start).Seconds())
			if sink.rows != windows*keys || float64(sink.counts) != rows {
				t.Fatalf("%s: %d rows counting %d, want %d counting %.0f", rn.name, sink.rows, sink.counts, windows*keys, rows)
			}
			if op.disk != nil {
				if rn.name == StateDisk && op.disk.evictions > 0 {
					t.Fatalf("disk within 256 MiB: %d evictions, the state does not fit", op.disk.evictions)
				}
				if rn.name == "disk_small" {
					if op.disk.evictions == 0 || op.disk.closes == 0 {
						t.Fatalf("disk within %d bytes: %d evictions, %d windows closed from pebble", rn.memory, op.disk.evictions, op.disk.closes)
					}
					evictions, closes = op.disk.evictions, op.disk.closes
				}
			}
			op.Close(ctx)
		}
	}
	t.Logf("rows %.0f: %v; small cache: %d evictions, %d windows closed from pebble", rows, walls, evictions, closes)
	writeBenchResult(t, map[string]any{"keys": keys, "windows": windows, "rows": rows, "reps": reps, "small_memory": small,
		"wall_s": walls, "evictions": evictions, "closes": closes})
}

// winBenchSink counts the rows a window aggregation emits and adds up their
// counts.
type winBenchSink struct{ rows, counts int64 }

func (s *winBenchSink) Collect(_ context.Context, b exec.Batch) error {
	s.rows += b.Rec.NumRows()
	n := b.Rec.Column(2).(*array.Int64)
	for i := range n.Len() {
		s.counts += n.Value(i)
	}
	return nil
}
func (s *winBenchSink) CollectSignal(context.Context, exec.Signal) error { return nil }

package operators

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// benchJoinSide is each side of the join benchmarks: a key, a time (the
// window's end, or the row's time) and a value.
var benchJoinSide = types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "t", Type: types.TimestampType}, {Name: "v", Type: types.Int64Type}}

// benchJoinBatch is rows lo .. lo+benchBatch of a side: key (i*7919) % keys,
// time t(i), value i.
func benchJoinBatch(mem memory.Allocator, lo, keys int64, t func(i int64) int64) arrow.RecordBatch {
	kb, tb, vb := array.NewInt64Builder(mem), array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond}), array.NewInt64Builder(mem)
	for i := lo; i < lo+benchBatch; i++ {
		kb.Append(i * 7919 % keys)
		tb.Append(arrow.Timestamp(t(i)))
		vb.Append(i)
	}
	cols := []arrow.Array{kb.NewArray(), tb.NewArray(), vb.NewArray()}
	kb.Release()
	tb.Release()
	vb.Release()
	defer vector.ReleaseArrays(cols)
	return array.NewRecordBatch(benchJoinSide.Arrow(), cols, benchBatch)
}

// benchCount counts the rows out.
type benchCount struct{ rows int64 }

func (c *benchCount) Collect(_ context.Context, b exec.Batch) error {
	c.rows += int64(b.NumRows())
	return nil
}
func (c *benchCount) CollectSignal(context.Context, exec.Signal) error { return nil }

// benchBackends are the runs of the join benchmarks: memory, disk with a
// cache that holds the open state (256 MiB of state memory), and disk with
// 16 MiB, which the state outgrows.
var benchBackends = []struct {
	name   string
	memory int64
}{{StateMemory, 0}, {StateDisk, 256 << 20}, {"disk_small", 16 << 20}}

// BenchmarkWindowJoinBackends: a tumbling window join of 2^18 rows a side
// per window, over 2^17 keys (two rows of each side per key and window, four
// pairs), 8 windows, each closed by the watermark once the next one's rows
// are in; rows/s counts both sides' rows in.
func BenchmarkWindowJoinBackends(b *testing.B) {
	const windows, perWindow, keys = 8, 1 << 18, 1 << 17
	const width = int64(10 * time.Second / time.Microsecond)
	mem := memory.NewGoAllocator()
	var batches [windows][]arrow.RecordBatch
	for w := range int64(windows) {
		for lo := int64(0); lo < perWindow; lo += benchBatch {
			batches[w] = append(batches[w], benchJoinBatch(mem, lo, keys, func(int64) int64 { return (w + 1) * width }))
		}
	}
	cfg := WindowJoinConfig{LeftEnd: 1, RightEnd: 1,
		Join: JoinConfig{Kind: "inner", LeftKeys: []int{0, 1}, RightKeys: []int{0, 1}, Left: benchJoinSide, Right: benchJoinSide}}
	out := append(append(types.Schema{}, benchJoinSide...), benchJoinSide...)
	for _, run := range benchBackends {
		b.Run(run.name, func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				c := cfg
				c.StateBackend = StateMemory
				if run.memory > 0 {
					c.StateBackend = StateDisk
				}
				op := opTestNew(b, "window_join", c, out)
				tc := &exec.TaskContext{Alloc: mem, StateMemory: run.memory, SpillDir: b.TempDir(), Parallelism: 1}
				if err := op.Open(ctx, tc); err != nil {
					b.Fatal(err)
				}
				n := &benchCount{}
				for w := range windows {
					for _, r := range batches[w] {
						for s := range 2 {
							if err := op.ProcessBatch(ctx, s, exec.Batch{Rec: r}, n); err != nil {
								b.Fatal(err)
							}
						}
					}
					if w > 0 {
						if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: int64(w)*width + 1}, n); err != nil {
							b.Fatal(err)
						}
					}
				}
				for s := range 2 {
					if err := op.ProcessSignal(ctx, s, exec.Signal{Kind: exec.EndOfStream}, n); err != nil {
						b.Fatal(err)
					}
				}
				op.Close(ctx)
				if want := int64(windows * perWindow * 2); n.rows != want {
					b.Fatalf("%d rows out, want %d", n.rows, want)
				}
			}
			b.ReportMetric(float64(b.N*windows*perWindow*2)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkIntervalJoinBackends: an interval join (l.t between r.t - 1s and
// r.t) of 2^20 rows a side, one every 10 µs over 2^16 keys, watermarks each
// side's latest every 16 batches; rows/s counts both sides' rows in.
func BenchmarkIntervalJoinBackends(b *testing.B) {
	const rows, keys = 1 << 20, 1 << 16
	mem := memory.NewGoAllocator()
	at := func(i int64) int64 { return 1_700_000_000_000_000 + i*10 }
	var batches []arrow.RecordBatch
	for lo := int64(0); lo < rows; lo += benchBatch {
		batches = append(batches, benchJoinBatch(mem, lo, keys, at))
	}
	cfg := ijConfig("inner", -1, 0)
	cfg.Left, cfg.Right = benchJoinSide, benchJoinSide
	out := append(append(types.Schema{}, benchJoinSide...), benchJoinSide...)
	for _, run := range benchBackends {
		b.Run(run.name, func(b *testing.B) {
			ctx := context.Background()
			var pairs int64
			for range b.N {
				c := cfg
				c.StateBackend = StateMemory
				if run.memory > 0 {
					c.StateBackend = StateDisk
				}
				op := opTestNew(b, "interval_join", c, out)
				tc := &exec.TaskContext{Alloc: mem, StateMemory: run.memory, SpillDir: b.TempDir(), Parallelism: 1}
				if err := op.Open(ctx, tc); err != nil {
					b.Fatal(err)
				}
				n := &benchCount{}
				for i, r := range batches {
					for s := range 2 {
						if err := op.ProcessBatch(ctx, s, exec.Batch{Rec: r}, n); err != nil {
							b.Fatal(err)
						}
					}
					if i%16 == 15 {
						for s := range 2 {
							if err := op.ProcessSignal(ctx, s, exec.Signal{Kind: exec.Watermark, Watermark: at(int64(i+1)*benchBatch - 1)}, n); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				for s := range 2 {
					if err := op.ProcessSignal(ctx, s, exec.Signal{Kind: exec.EndOfStream}, n); err != nil {
						b.Fatal(err)
					}
				}
				op.Close(ctx)
				if pairs != 0 && n.rows != pairs {
					b.Fatalf("%d rows out, %d before", n.rows, pairs)
				}
				pairs = n.rows
			}
			b.ReportMetric(float64(b.N*rows*2)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(pairs), "pairs")
		})
	}
}

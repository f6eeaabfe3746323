package operators

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// BenchmarkTopN is q19's shape, the top 10 bids by price of each of 10,000
// auctions, bounded (Final), against the window operator numbering every row.
func BenchmarkTopN(b *testing.B) {
	in := types.Schema{{Name: "auction", Type: types.Int64Type}, {Name: "price", Type: types.Int64Type}, {Name: "extra", Type: types.StringType}}
	mem := testkit.Mem()
	rng := rand.New(rand.NewPCG(1, 1))
	var batches []exec.Batch
	for range 20 {
		var rows []string
		for range 8192 {
			rows = append(rows, fmt.Sprintf(`{"auction": %d, "price": %d, "extra": "%s"}`, rng.IntN(10000), rng.IntN(1000000), strings.Repeat("x", 80)))
		}
		batches = append(batches, testkit.Batches(b, mem, in, "["+strings.Join(rows, ",")+"]")...)
	}
	defer testkit.Release(batches)
	out := append(in[:3:3], types.Field{Name: "rn", Type: types.Int64Type})
	run := func(b *testing.B, op exec.Operator) {
		ctx := context.Background()
		defer op.Close(ctx)
		if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
			b.Fatal(err)
		}
		for _, bt := range batches {
			if err := op.ProcessBatch(ctx, 0, bt, discard{}); err != nil {
				b.Fatal(err)
			}
		}
		if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, discard{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("topn", func(b *testing.B) {
		for range b.N {
			run(b, opTestNew(b, "topn", TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1, Desc: true}}, Lo: 1, Hi: 10, Rank: true, Final: true}, out))
		}
	})
	b.Run("window", func(b *testing.B) {
		for range b.N {
			run(b, opTestNew(b, "window", WindowConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1, Desc: true}},
				Funcs: []WindowFuncSpec{{Func: "row_number", Default: -1, Type: types.Int64Type, Frame: WindowFrame{StartUnbounded: true}}}}, out))
		}
	})
}

// BenchmarkTopNBackend is q19's shape as a continuous query (the top 10 bids
// by price of each of 10,000 auctions, its changes flushed after each batch
// of 8192 bids) on the memory backend, on the disk backend with a state
// that fits its cache (256 MiB), and on the disk backend with 4 MiB of state
// memory, a cache of 1 MiB that the state (about 100,000 rows of 100
// bytes) outgrows, so partitions are written back and loaded again.
func BenchmarkTopNBackend(b *testing.B) {
	in := types.Schema{{Name: "auction", Type: types.Int64Type}, {Name: "price", Type: types.Int64Type}, {Name: "extra", Type: types.StringType}}
	mem := testkit.Mem()
	rng := rand.New(rand.NewPCG(1, 1))
	var batches []exec.Batch
	for range 20 {
		var rows []string
		for range 8192 {
			rows = append(rows, fmt.Sprintf(`{"auction": %d, "price": %d, "extra": "%s"}`, rng.IntN(10000), rng.IntN(1000000), strings.Repeat("x", 80)))
		}
		batches = append(batches, testkit.Batches(b, mem, in, "["+strings.Join(rows, ",")+"]")...)
	}
	defer testkit.Release(batches)
	out := append(in[:3:3], types.Field{Name: "rn", Type: types.Int64Type})
	for _, c := range []struct {
		name    string
		backend string
		memory  int64
	}{{"memory", StateMemory, 0}, {"disk", StateDisk, 256 << 20}, {"disk-4MiB", StateDisk, 4 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				cfg := TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1, Desc: true}}, Lo: 1, Hi: 10, Rank: true, StateBackend: c.backend}
				op := opTestNew(b, "topn", cfg, out).(*topnOp)
				tc := testkit.TaskContext(mem)
				tc.StateMemory, tc.SpillDir = c.memory, b.TempDir()
				if err := op.Open(ctx, tc); err != nil {
					b.Fatal(err)
				}
				for _, bt := range batches {
					err := op.ProcessBatch(ctx, 0, bt, discard{})
					if err == nil {
						err = op.Flush(ctx, discard{})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if op.disk != nil {
					b.ReportMetric(float64(op.disk.evictions), "evictions")
				}
				op.Close(ctx)
			}
			b.ReportMetric(float64(len(batches)*8192*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

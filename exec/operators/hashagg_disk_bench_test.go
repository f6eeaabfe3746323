package operators

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
	"github.com/hummer-db/hummer/exec/types"
)

// The disk state backend's benchmarks (issue 27): a streaming GROUP BY
// (count(*), sum(x) by a bigint key) on either backend. BenchmarkHashAggBackend
// compares their throughput on a state that fits in memory;
// TestHashAggDiskScale, run only with HUMMER_STATE_KEYS set, folds that many
// distinct keys once each on the disk backend within HUMMER_STATE_MEMORY
// (default 256MiB) and reports the time, the peak RSS, and the sizes of a
// full and of an incremental checkpoint after one percent of the keys
// changed:
//
//	HUMMER_STATE_KEYS=50000000 go test -run TestHashAggDiskScale -v ./exec/operators/

const benchBatch = 4096

// benchKeys returns a batch of keys lo, lo+step, ... (mod keys) and x = 1.
func benchKeys(mem memory.Allocator, lo, step, keys int64) arrow.RecordBatch {
	kb, xb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	defer kb.Release()
	defer xb.Release()
	kb.Reserve(benchBatch)
	xb.Reserve(benchBatch)
	for i := range int64(benchBatch) {
		kb.UnsafeAppend((lo + i*step) % keys)
		xb.UnsafeAppend(1)
	}
	k, x := kb.NewArray(), xb.NewArray()
	defer k.Release()
	defer x.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{k, x}, benchBatch)
}

// benchAgg opens a streaming count(*), sum(x) GROUP BY k on backend.
func benchAgg(tb testing.TB, backend string, tc *exec.TaskContext) *hashAggOp {
	cfg := HashAggConfig{GroupBy: []int{0}, Emit: AggEmitUpdates, StateBackend: backend, Aggs: []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type}, {Func: "sum", Arg: 1, Type: aggTestDec0}}}
	out := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "n", Type: types.Int64Type}, {Name: "s", Type: aggTestDec0}}
	op := opTestNew(tb, "hash_agg", cfg, out).(*hashAggOp)
	if err := op.Open(context.Background(), tc); err != nil {
		tb.Fatal(err)
	}
	return op
}

// benchSink counts what an operator emits.
type benchSink struct{ rows int64 }

func (d *benchSink) Collect(_ context.Context, b exec.Batch) error {
	d.rows += b.Rec.NumRows()
	return nil
}
func (d *benchSink) CollectSignal(context.Context, exec.Signal) error { return nil }

// BenchmarkHashAggBackend: 256k keys, each seen 8 times in batches of 4096,
// flushed every 16 batches, on each backend (disk with 256MiB: the state
// fits its cache).
func BenchmarkHashAggBackend(b *testing.B) {
	const keys = 1 << 18
	for _, backend := range []string{StateMemory, StateDisk} {
		b.Run(backend, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			tc := &exec.TaskContext{Alloc: mem, StateMemory: 256 << 20, SpillDir: b.TempDir()}
			batches := make([]arrow.RecordBatch, 8*keys/benchBatch)
			for i := range batches {
				batches[i] = benchKeys(mem, int64(i*benchBatch), 7919, keys)
			}
			defer func() {
				for _, r := range batches {
					r.Release()
				}
			}()
			ctx := context.Background()
			out := &benchSink{}
			b.ResetTimer()
			for range b.N {
				op := benchAgg(b, backend, tc)
				for i, r := range batches {
					if err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: r}, out); err != nil {
						b.Fatal(err)
					}
					if i%16 == 15 {
						if err := op.Flush(ctx, out); err != nil {
							b.Fatal(err)
						}
					}
				}
				op.Close(ctx)
			}
			b.ReportMetric(float64(b.N*len(batches)*benchBatch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// peakRSS returns the process's VmHWM in MiB (Linux), or -1.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}

// checkpointSizes takes checkpoint id of op and returns the bytes it uploaded
// and the size of the state it covers.
func checkpointSizes(t *testing.T, op *hashAggOp, id int64) (uploaded, total int64) {
	t.Helper()
	ctx := context.Background()
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Barrier, Checkpoint: id}, &benchSink{}); err != nil {
		t.Fatal(err)
	}
	blob, err := op.SnapshotState(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sections, err := state.Decode("hash_agg", hashAggDiskMagic, hashAggDiskVersion, blob)
	if err != nil {
		t.Fatal(err)
	}
	m, err := disk.UnmarshalManifest(sections[1])
	if err != nil {
		t.Fatal(err)
	}
	return m.Uploaded, m.Total
}

func TestHashAggDiskScale(t *testing.T) {
	keysEnv := os.Getenv("HUMMER_STATE_KEYS")
	if keysEnv == "" {
		t.Skip("HUMMER_STATE_KEYS not set: a benchmark")
	}
	keys, err := strconv.ParseInt(keysEnv, 10, 64)
	if err != nil || keys < benchBatch {
		t.Fatalf("HUMMER_STATE_KEYS=%q", keysEnv)
	}
	stateMem := int64(256 << 20)
	if v := os.Getenv("HUMMER_STATE_MEMORY"); v != "" {
		if stateMem, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	keys = (keys + benchBatch - 1) / benchBatch * benchBatch
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM
	before := peakRSS()
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mem := memory.NewGoAllocator()
	tc := &exec.TaskContext{Alloc: mem, StateMemory: stateMem, SpillDir: t.TempDir(), StateFiles: store.Files("job", "0.0")}
	op := benchAgg(t, StateDisk, tc)
	defer op.Close(ctx)
	out := &benchSink{}
	start := time.Now()
	nb := (keys + benchBatch - 1) / benchBatch
	for i := range nb {
		r := benchKeys(mem, i*benchBatch, 1, keys)
		err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: r}, out)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if i%16 == 15 {
			if err := op.Flush(ctx, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := op.Flush(ctx, out); err != nil {
		t.Fatal(err)
	}
	fold := time.Since(start)
	if out.rows != nb*benchBatch {
		t.Fatalf("%d rows out, want one insert per key, %d", out.rows, nb*benchBatch)
	}
	start = time.Now()
	fullUp, fullTotal := checkpointSizes(t, op, 1)
	fullTime := time.Since(start)
	// One percent of the keys change.
	for i := range max(nb/100, 1) {
		r := benchKeys(mem, i*100*benchBatch, 1, keys)
		err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: r}, out)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	incUp, incTotal := checkpointSizes(t, op, 2)
	incTime := time.Since(start)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "| keys | --state-memory | fold s | rows/s | peak RSS MiB (before) | evictions | full checkpoint MB, s | incremental MB of MB, s | incremental / full |\n")
	fmt.Fprintf(&buf, "| %d | %d MiB | %.1f | %.0f | %.0f (%.0f) | %d | %.1f, %.1f | %.1f of %.1f, %.1f | %.3f |\n",
		keys, stateMem>>20, fold.Seconds(), float64(keys)/fold.Seconds(), peakRSS(), before, op.disk.evictions,
		float64(fullUp)/1e6, fullTime.Seconds(), float64(incUp)/1e6, float64(incTotal)/1e6, incTime.Seconds(),
		float64(incUp)/float64(max(fullUp, 1)))
	t.Logf("disk state backend, streaming GROUP BY:\n%s(full checkpoint covered %.1f MB)", buf.String(), float64(fullTotal)/1e6)
}

package operators

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// The disk state backend's benchmarks (issue 27), run by the suite "state"
// of bench/cmd/wordcount (make bench-state), which reads the JSON they write
// to HUMMER_STATE_OUT: a streaming GROUP BY (count(*), sum(x) by a bigint key)
// over many keys on the disk backend (TestHashAggDiskScale), and the two
// backends' throughput on a state that fits (TestHashAggBackendThroughput).
// Both are skipped unless their environment variables are set.

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

// checkSink checks what the scale test's aggregation emits: per change kind,
// its rows and the sums of their keys and counts.
type checkSink struct {
	rows, keys, counts [4]int64 // by exec.ChangeKind
}

func (c *checkSink) Collect(_ context.Context, b exec.Batch) error {
	k := b.Rec.Column(0).(*array.Int64)
	n := b.Rec.Column(1).(*array.Int64)
	for i := range b.NumRows() {
		op := b.Op(i)
		c.rows[op]++
		c.keys[op] += k.Value(i)
		c.counts[op] += n.Value(i)
	}
	return nil
}
func (c *checkSink) CollectSignal(context.Context, exec.Signal) error { return nil }

// foldBatches pushes batches through op, flushing every 16 batches as a
// task's idle flush would, and then once more.
func foldBatches(tb testing.TB, op *hashAggOp, out exec.Collector, n int64, batch func(i int64) arrow.RecordBatch) {
	ctx := context.Background()
	for i := range n {
		r := batch(i)
		err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: r}, out)
		r.Release()
		if err != nil {
			tb.Fatal(err)
		}
		if i%16 == 15 {
			if err := op.Flush(ctx, out); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := op.Flush(ctx, out); err != nil {
		tb.Fatal(err)
	}
}

// cpuTime returns the process's user + system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeBenchResult writes v as JSON to the file HUMMER_STATE_OUT names, if it does.
func writeBenchResult(t *testing.T, v any) {
	out := os.Getenv("HUMMER_STATE_OUT")
	if out == "" {
		return
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// benchEnv returns the integer environment variable name, def when unset.
func benchEnv(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q", name, v)
	}
	return n
}

// TestHashAggDiskScale folds HUMMER_STATE_KEYS distinct keys, each once, on
// the disk backend within HUMMER_STATE_MEMORY, then folds one percent of them
// again, and checks every row emitted against the counts: one insert per key
// (their keys summing to 0 + 1 + ... + keys-1, each of count 1), then for each
// key seen again an update from count 1 to count 2, whose old value came back
// from pebble (the cache was emptied many times over in between). Peak RSS is
// the test process's, which bench/cmd/wordcount measures from outside.
func TestHashAggDiskScale(t *testing.T) {
	if os.Getenv("HUMMER_STATE_KEYS") == "" {
		t.Skip("HUMMER_STATE_KEYS not set: a benchmark")
	}
	vector.PoisonSlices = false // a test run's safety net, not the engine's cost
	keys := benchEnv(t, "HUMMER_STATE_KEYS", 0)
	stateMem := benchEnv(t, "HUMMER_STATE_MEMORY", 256<<20)
	keys = (keys + benchBatch - 1) / benchBatch * benchBatch
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	tc := &exec.TaskContext{Alloc: mem, StateMemory: stateMem, SpillDir: t.TempDir()}
	op := benchAgg(t, StateDisk, tc)
	defer op.Close(ctx)
	out := &checkSink{}
	nb := keys / benchBatch
	cpu0, start := cpuTime(), time.Now()
	foldBatches(t, op, out, nb, func(i int64) arrow.RecordBatch { return benchKeys(mem, i*benchBatch, 1, keys) })
	wall, cpu := time.Since(start), cpuTime()-cpu0
	want := checkSink{}
	want.rows[exec.Insert], want.keys[exec.Insert], want.counts[exec.Insert] = keys, keys*(keys-1)/2, keys
	if *out != want {
		t.Fatalf("after one pass: emitted %+v, want %+v", *out, want)
	}
	// One percent of the keys again: every hundredth batch's.
	*out = checkSink{}
	again := max(nb/100, 1)
	foldBatches(t, op, out, again, func(i int64) arrow.RecordBatch { return benchKeys(mem, i*100*benchBatch, 1, keys) })
	var sum int64
	for i := range again {
		lo := i * 100 * benchBatch
		sum += benchBatch*lo + benchBatch*(benchBatch-1)/2
	}
	n := again * benchBatch
	want = checkSink{}
	want.rows[exec.UpdateBefore], want.keys[exec.UpdateBefore], want.counts[exec.UpdateBefore] = n, sum, n
	want.rows[exec.UpdateAfter], want.keys[exec.UpdateAfter], want.counts[exec.UpdateAfter] = n, sum, 2*n
	if *out != want {
		t.Fatalf("after one percent again: emitted %+v, want %+v", *out, want)
	}
	res := map[string]any{"keys": keys, "state_memory": stateMem, "wall_s": wall.Seconds(), "cpu_s": cpu.Seconds(),
		"evictions": op.disk.evictions, "disk_bytes": op.disk.db.DiskBytes(), "again_keys": n}
	t.Logf("%d keys in %.1f s (%.1f s CPU), %d evictions; %d keys again, exact", keys, wall.Seconds(), cpu.Seconds(), op.disk.evictions, n)
	writeBenchResult(t, res)
}

// TestHashAggBackendThroughput compares the backends' throughput on a state
// that fits in memory: HUMMER_STATE_FIT_KEYS keys (default 2^19), each seen 8
// times in batches of 4096 scattered over the key space, flushed every 16
// batches, the disk backend within 256MiB (its cache holds every group, so
// it empties none); HUMMER_STATE_REPS runs of each, alternating.
func TestHashAggBackendThroughput(t *testing.T) {
	if os.Getenv("HUMMER_STATE_FIT_KEYS") == "" {
		t.Skip("HUMMER_STATE_FIT_KEYS not set: a benchmark")
	}
	vector.PoisonSlices = false
	keys := benchEnv(t, "HUMMER_STATE_FIT_KEYS", 1<<19)
	reps := benchEnv(t, "HUMMER_STATE_REPS", 5)
	mem := memory.NewGoAllocator()
	batches := make([]arrow.RecordBatch, 8*keys/benchBatch)
	for i := range batches {
		batches[i] = benchKeys(mem, int64(i*benchBatch), 7919, keys)
	}
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	rows := float64(len(batches) * benchBatch)
	res := map[string]any{"keys": keys, "rows": rows, "reps": reps}
	walls := map[string][]float64{}
	for r := range reps {
		for i := range 2 {
			backend := []string{StateMemory, StateDisk}[(int(r)+i)%2]
			tc := &exec.TaskContext{Alloc: mem, StateMemory: 256 << 20, SpillDir: t.TempDir()}
			op := benchAgg(t, backend, tc)
			out := &benchSink{}
			start := time.Now()
			foldBatches(t, op, out, int64(len(batches)), func(i int64) arrow.RecordBatch { batches[i].Retain(); return batches[i] })
			walls[backend] = append(walls[backend], time.Since(start).Seconds())
			if out.rows < keys {
				t.Fatalf("%s: %d rows out for %d keys", backend, out.rows, keys)
			}
			if op.disk != nil && op.disk.evictions > 0 {
				t.Fatalf("the state does not fit: %d evictions", op.disk.evictions)
			}
			op.Close(context.Background())
		}
	}
	res["wall_s"] = walls
	t.Logf("rows %.0f: memory %v s, disk %v s", rows, walls[StateMemory], walls[StateDisk])
	writeBenchResult(t, res)
}

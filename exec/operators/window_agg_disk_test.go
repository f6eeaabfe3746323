package operators

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
)

// TestWindowAggDisk: a window aggregation on the disk backend, with a cache
// of a few kilobytes, against the memory backend's as the reference: random
// rows of several keys, out of order within the watermark's delay (and now
// and then later than that), in tumbling or hopping windows, the same
// watermarks, checkpointed at random points and restored each time into a
// fresh operator (the store pruned to the newest checkpoint, so restores read
// an incremental chain). Between any two signals both emit the same rows, and
// they count the same late rows; the disk backend must have evicted to
// pebble and closed windows from it, and ends with its DB empty. The final
// phase runs behind a partial one on the memory backend, as a two-phase plan
// has it.
func TestWindowAggDisk(t *testing.T) {
	for seed := range uint64(8) {
		hop := seed%2 == 1
		phase := AggComplete
		if seed%4 >= 2 {
			phase = AggFinal
		}
		t.Run(fmt.Sprintf("%d/hop=%t/%s", seed, hop, phase), func(t *testing.T) {
			windowAggDiskRun(t, seed, hop, phase)
		})
	}
}

// winDiskSegments records the rows emitted between signals, each run sorted
// (the order within a window's rows is not defined).
type winDiskSegments struct {
	c    testkit.Collector
	segs []string
}

func (s *winDiskSegments) Collect(ctx context.Context, b exec.Batch) error {
	return s.c.Collect(ctx, b)
}

func (s *winDiskSegments) CollectSignal(ctx context.Context, sig exec.Signal) error {
	s.segs = append(s.segs, fmt.Sprintf("%v %s", strings.Join(s.c.Sorted(), "\n"), sig.Kind))
	s.c.Rows = nil
	return nil
}

// winDiskTee passes what it gets to the reference and the operator under
// test.
type winDiskTee struct {
	ref, op       exec.Operator
	refOut, opOut *winDiskSegments
}

func (c *winDiskTee) Collect(ctx context.Context, b exec.Batch) error {
	if err := c.ref.ProcessBatch(ctx, 0, b, c.refOut); err != nil {
		return err
	}
	return c.op.ProcessBatch(ctx, 0, b, c.opOut)
}

func (c *winDiskTee) CollectSignal(ctx context.Context, s exec.Signal) error {
	if err := c.ref.ProcessSignal(ctx, 0, s, c.refOut); err != nil {
		return err
	}
	return c.op.ProcessSignal(ctx, 0, s, c.opOut)
}

// winDiskTime is the time column of a stateTestRow.
var winDiskTime = regexp.MustCompile(`"t": [^,]*`)

func windowAggDiskRun(t *testing.T, seed uint64, hop bool, phase AggPhase) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 27))

	// Event times: a clock that moves on, each row up to the delay behind
	// it, one in thirty well past it (late once the watermark passed it).
	const delay = int64(time.Second / time.Microsecond)
	size, slide := delay, delay
	if hop {
		size, slide = 2*delay, delay/2
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	clock, maxTime := base, base
	type step struct {
		batch *exec.Batch
		sig   exec.Signal
	}
	var steps []step
	var batches []exec.Batch
	defer func() { testkit.Release(batches) }()
	for range 60 {
		var rows []string
		for range 1 + rng.IntN(40) {
			clock += rng.Int64N(delay / 10)
			ts := clock - rng.Int64N(delay)
			if rng.IntN(30) == 0 {
				ts -= 3 * delay
			}
			maxTime = max(maxTime, ts)
			row := stateTestRow(rng)
			at := winDiskTime.FindStringIndex(row)
			// The row's windows: their ends past ts, at most size past it.
			for end := (ts/slide + 1) * slide; end <= ts+size; end += slide {
				rows = append(rows, fmt.Sprintf(`%s"t": "%s"%s`, row[:at[0]], time.UnixMicro(end).UTC().Format("2006-01-02 15:04:05.999999"), row[at[1]:]))
			}
		}
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		b := testkit.Batches(t, mem, stateTestIn, "["+strings.Join(rows, ",")+"]")[0]
		batches = append(batches, b)
		steps = append(steps, step{batch: &batches[len(batches)-1]})
		if rng.IntN(2) == 0 {
			steps = append(steps, step{sig: exec.Signal{Kind: exec.Watermark, Watermark: maxTime - delay}})
		}
	}
	steps = append(steps, step{sig: exec.Signal{Kind: exec.EndOfStream}})

	aggs := stateTestConcat(stateTestSums, stateTestMinMax)
	if phase == AggComplete {
		// Only a complete phase has the aggregates that keep a group's values.
		aggs = stateTestConcat(aggs, stateTestDistinct, stateTestStringAgg)
	}
	groupBy := []int{0, 6, 1} // k, the window's end, g
	groupCols := types.Schema{}
	for _, c := range groupBy {
		groupCols = append(groupCols, stateTestIn[c])
	}
	out := slices.Clone(groupCols)
	for _, a := range aggs {
		out = append(out, types.Field{Name: fmt.Sprintf("c%d", len(out)), Type: a.Type})
	}
	cfg := WindowAggConfig{End: 1, Agg: HashAggConfig{GroupBy: groupBy, Aggs: aggs, Phase: phase}}
	// The final phase reads a partial one's rows, keys first.
	var partial exec.Operator
	if phase == AggFinal {
		partialOut := PartialSchema(groupCols, aggs, stateTestIn)
		partial = opTestNew(t, "window_agg", WindowAggConfig{End: 1, Agg: HashAggConfig{GroupBy: groupBy, Aggs: aggs, Phase: AggPartial}}, partialOut)
		if err := partial.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		defer partial.Close(ctx)
		cfg.Agg.GroupBy = []int{0, 1, 2}
	}

	refTC := testkit.TaskContext(mem)
	refTC.Metrics = &exec.TaskMetrics{}
	ref := opTestNew(t, "window_agg", cfg, out)
	if err := ref.Open(ctx, refTC); err != nil {
		t.Fatal(err)
	}
	defer ref.Close(ctx)

	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	diskCfg := cfg
	diskCfg.Agg.StateBackend = StateDisk
	tc := testkit.TaskContext(mem)
	tc.Metrics = &exec.TaskMetrics{}
	tc.StateFiles = store.Files("job", "1.0")
	// A cache of 4 KiB, which every batch outgrows (an open window's cache
	// holds about 12 KiB even empty), or of 256 KiB, which the windows
	// outgrow now and then, so that some windows close from the cache alone;
	// that one holds after every batch.
	tc.StateMemory = 16 << 10
	if seed%3 != 0 {
		tc.StateMemory = 1 << 20
	}
	tc.SpillDir = t.TempDir()
	open := func() *windowAggOp {
		op := opTestNew(t, "window_agg", diskCfg, out)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op.(*windowAggOp)
	}
	op := open()
	defer func() { op.Close(ctx) }()
	if op.disk == nil {
		t.Fatal("the operator is not on the disk backend")
	}
	tee := &winDiskTee{ref: ref, op: op, refOut: &winDiskSegments{c: testkit.Collector{T: t}}, opOut: &winDiskSegments{c: testkit.Collector{T: t}}}
	feed := func(s step) error {
		var next exec.Collector = tee
		if partial != nil {
			if s.batch != nil {
				return partial.ProcessBatch(ctx, 0, *s.batch, next)
			}
			return partial.ProcessSignal(ctx, 0, s.sig, next)
		}
		if s.batch != nil {
			return next.Collect(ctx, *s.batch)
		}
		return next.CollectSignal(ctx, s.sig)
	}
	evictions, closes, cached, restores := 0, 0, 0, 0
	for i, s := range steps {
		if err := feed(s); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if op.disk != nil && tc.StateMemory >= 1<<20 {
			var n int64
			for _, w := range op.wins {
				n += w.cacheBytes()
			}
			if n > op.disk.limit {
				t.Fatalf("step %d: the windows' caches hold %d bytes, over their bound of %d", i, n, op.disk.limit)
			}
		}
		if op.disk == nil || s.sig.Kind == exec.EndOfStream || rng.IntN(6) != 0 {
			continue
		}
		id := int64(i + 1)
		if err := feed(step{sig: exec.Signal{Kind: exec.Barrier, Checkpoint: id}}); err != nil {
			t.Fatal(err)
		}
		snap, err := op.SnapshotState(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Complete(ctx, "job", id); err != nil {
			t.Fatal(err)
		}
		if err := store.Prune(ctx, "job", 1); err != nil {
			t.Fatal(err)
		}
		evictions += op.disk.evictions
		closes += op.disk.closes
		cached += op.disk.cached
		op.Close(ctx)
		op = open()
		tee.op = op
		if err := op.RestoreState(ctx, snap); err != nil {
			t.Fatalf("restoring checkpoint %d: %v", id, err)
		}
		restores++
	}
	evictions += op.disk.evictions
	closes += op.disk.closes
	cached += op.disk.cached
	left := 0
	if err := op.disk.db.Scan(nil, nil, func(_, _ []byte) error { left++; return nil }); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d keys left in the DB after every window closed", left)
	}
	if evictions == 0 || closes == 0 || restores == 0 {
		t.Fatalf("%d evictions, %d windows closed from pebble, %d restores: the test does not test the disk backend", evictions, closes, restores)
	}
	if len(tee.refOut.segs) < 10 {
		t.Fatalf("%d signals: the test does not test closing windows", len(tee.refOut.segs))
	}
	testkit.Equal(t, "rows between signals, disk against memory", tee.opOut.segs, tee.refOut.segs)
	if got, want := tc.Metrics.LateRows.Load(), refTC.Metrics.LateRows.Load(); got != want || (phase == AggComplete && want == 0) {
		t.Errorf("%d late rows on disk, %d on memory (want equal, and some)", got, want)
	}
	t.Logf("%d evictions, %d windows closed from pebble, %d from the cache, %d restores, %d signals, %d late rows", evictions, closes, cached, restores, len(tee.refOut.segs), refTC.Metrics.LateRows.Load())
}

// TestWindowAggDiskBackend: which window aggregations go on the disk
// backend: every complete one, also with the disk only the TaskManager's
// default; a partial phase stays in memory;
// a checkpoint of one backend restored on the other is an error naming the
// setting.
func TestWindowAggDiskBackend(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "window_end", Type: types.TimestampType}}
	out := types.Schema{in[0], in[1], {Name: "c", Type: types.Int64Type}}
	cfg := WindowAggConfig{End: 1, Agg: HashAggConfig{GroupBy: []int{0, 1}, StateBackend: StateDisk,
		Aggs: []AggSpec{{Func: "count", Arg: 0, Distinct: true, Type: types.Int64Type}}}}
	open := func(cfg WindowAggConfig, tc *exec.TaskContext) (*windowAggOp, error) {
		op := opTestNew(t, "window_agg", cfg, out).(*windowAggOp)
		t.Cleanup(func() { op.Close(ctx) })
		tc.SpillDir = t.TempDir()
		return op, op.Open(ctx, tc)
	}
	byDefault := testkit.TaskContext(mem)
	byDefault.StateBackend = StateDisk
	cfg.Agg.StateBackend = ""
	if op, err := open(cfg, byDefault); err != nil || op.disk == nil {
		t.Fatalf("count(DISTINCT) with the disk as the TaskManager's default: %v, on disk %t", err, op.disk != nil)
	}
	cfg.Agg.Aggs[0].Distinct = false
	cfg.Agg.Phase = AggPartial
	if op, err := open(cfg, byDefault); err != nil || op.disk != nil {
		t.Fatalf("a partial phase with the disk as the TaskManager's default: %v, on disk %t", err, op.disk != nil)
	}
	cfg.Agg.Phase = AggComplete
	onDisk, err := open(cfg, byDefault)
	if err != nil || onDisk.disk == nil {
		t.Fatalf("count with the disk as the TaskManager's default: %v, on disk %t", err, onDisk.disk != nil)
	}
	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	onDisk.disk.files = store.Files("job", "1.0")
	bs := testkit.Batches(t, mem, in, `[{"k": 1, "window_end": "2024-01-01 00:00:10"}]`)
	defer testkit.Release(bs)
	c := &testkit.Collector{T: t}
	if err := onDisk.ProcessBatch(ctx, 0, bs[0], c); err != nil {
		t.Fatal(err)
	}
	diskSnap, err := onDisk.SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	memOp, err := open(cfg, testkit.TaskContext(mem))
	if err != nil || memOp.disk != nil {
		t.Fatalf("count on memory: %v", err)
	}
	if err := memOp.ProcessBatch(ctx, 0, bs[0], c); err != nil {
		t.Fatal(err)
	}
	memSnap, err := memOp.SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	memOp2, _ := open(cfg, testkit.TaskContext(mem))
	if err := memOp2.RestoreState(ctx, diskSnap); !errors.Is(err, state.ErrBadState) || !strings.Contains(err.Error(), "SET state_backend = 'disk'") {
		t.Errorf("a disk checkpoint restored on memory: %v", err)
	}
	diskOp2, _ := open(cfg, byDefault)
	if err := diskOp2.RestoreState(ctx, memSnap); !errors.Is(err, state.ErrBadState) || !strings.Contains(err.Error(), "SET state_backend = 'memory'") {
		t.Errorf("a memory checkpoint with an open window restored on disk: %v", err)
	}
}

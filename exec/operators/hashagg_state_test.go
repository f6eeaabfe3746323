package operators

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
)

// stateTestIn is aggTestIn plus a timestamp and a boolean column:
// k 0, g 1, x 2, f 3, d 4, s 5, t 6, b 7.
var stateTestIn = append(append(types.Schema{}, aggTestIn...),
	types.Field{Name: "t", Type: types.TimestampType}, types.Field{Name: "b", Type: types.BoolType})

var (
	// stateTestSums are the aggregates that take retractions: count, sum and
	// avg of every type they take.
	stateTestSums = []AggSpec{
		{Func: "count", Arg: -1, Type: types.Int64Type},
		{Func: "count", Arg: 5, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Type: aggTestDec0},
		{Func: "sum", Arg: 3, Type: types.Float64Type},
		{Func: "sum", Arg: 4, Type: aggTestDec2},
		{Func: "avg", Arg: 2, Type: types.Float64Type},
		{Func: "avg", Arg: 2, Type: aggTestDec2},
		{Func: "avg", Arg: 3, Type: types.Float64Type},
		{Func: "avg", Arg: 4, Type: types.DecimalType(38, 3)},
	}
	// stateTestMinMax is min and max of every type they take.
	stateTestMinMax = func() []AggSpec {
		var out []AggSpec
		for _, c := range []int{2, 3, 4, 5, 6, 7} {
			out = append(out, AggSpec{Func: "min", Arg: c, Type: stateTestIn[c].Type},
				AggSpec{Func: "max", Arg: c, Type: stateTestIn[c].Type})
		}
		return out
	}()
	stateTestDistinct = []AggSpec{
		{Func: "count", Arg: 2, Distinct: true, Type: types.Int64Type},
		{Func: "count", Arg: 5, Distinct: true, Type: types.Int64Type},
		{Func: "count", Arg: 4, Distinct: true, Type: types.Int64Type},
		{Func: "sum", Arg: 2, Distinct: true, Type: aggTestDec0},
		{Func: "avg", Arg: 3, Distinct: true, Type: types.Float64Type},
		{Func: "sum", Arg: 4, Distinct: true, Type: aggTestDec2},
	}
)

// stateTestStringAgg is string_agg: unordered, ordered by two keys, DISTINCT.
var stateTestStringAgg = []AggSpec{
	{Func: "string_agg", Arg: 5, Sep: ",", Type: types.StringType},
	{Func: "string_agg", Arg: 5, Sep: "", Type: types.StringType, Order: []SortKeySpec{{Col: 2}, {Col: 4, Desc: true, NullsFirst: true}}},
	{Func: "string_agg", Arg: 5, Sep: "; ", Distinct: true, Type: types.StringType, Order: []SortKeySpec{{Col: 5}}},
}

func stateTestConcat(lists ...[]AggSpec) []AggSpec { return slices.Concat(lists...) }

// stateTestRow returns a random row of stateTestIn as a JSON object, with
// NULLs in every column and bigints near the ends of their range, whose sums
// overflow into decimal.
func stateTestRow(rng *rand.Rand) string {
	words := []string{"a", "b", "", "a word longer than sixteen bytes", "ü"}
	val := func(nullOdds int, f func() string) string {
		if rng.IntN(nullOdds) == 0 {
			return "null"
		}
		return f()
	}
	k := val(8, func() string { return fmt.Sprintf("%q", words[rng.IntN(len(words))]) })
	g := val(8, func() string { return fmt.Sprint(rng.IntN(3)) })
	x := val(5, func() string {
		switch rng.IntN(12) {
		case 0:
			return fmt.Sprint(int64(1<<63-1) - rng.Int64N(3))
		case 1:
			return fmt.Sprint(-int64(1<<63-1) + rng.Int64N(3))
		}
		return fmt.Sprint(rng.IntN(200) - 100)
	})
	f := val(5, func() string {
		if rng.IntN(10) == 0 {
			return "-0.0"
		}
		return fmt.Sprint(float64(rng.IntN(9)-4) / 4)
	})
	d := val(5, func() string { return fmt.Sprintf("%d.%02d", rng.IntN(20)-10, rng.IntN(100)) })
	s := val(5, func() string { return fmt.Sprintf("%q", words[rng.IntN(len(words))]) })
	ts := val(5, func() string { return fmt.Sprintf(`"2024-01-0%d 0%d:00:00"`, 1+rng.IntN(3), rng.IntN(3)) })
	b := val(5, func() string { return fmt.Sprint(rng.IntN(2) == 0) })
	return fmt.Sprintf(`{"k": %s, "g": %s, "x": %s, "f": %s, "d": %s, "s": %s, "t": %s, "b": %s}`, k, g, x, f, d, s, ts, b)
}

// stateTestInput returns random batches of stateTestIn; with retract, some rows
// are deletes or update-befores of rows inserted earlier and not yet retracted.
func stateTestInput(t *testing.T, rng *rand.Rand, mem memory.Allocator, retract bool) []exec.Batch {
	var live []string
	var batches []exec.Batch
	for range 1 + rng.IntN(8) {
		var rows []string
		var ops []exec.ChangeKind
		for range rng.IntN(25) {
			if retract && len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				rows = append(rows, live[i])
				live = slices.Delete(live, i, i+1)
				ops = append(ops, []exec.ChangeKind{exec.Delete, exec.UpdateBefore}[rng.IntN(2)])
				continue
			}
			r := stateTestRow(rng)
			rows = append(rows, r)
			live = append(live, r)
			ops = append(ops, []exec.ChangeKind{exec.Insert, exec.UpdateAfter}[rng.IntN(2)])
		}
		b := testkit.Batches(t, mem, stateTestIn, "["+strings.Join(rows, ",")+"]")[0]
		if retract || rng.IntN(2) == 0 {
			b.Ops = ops
		}
		batches = append(batches, b)
	}
	return batches
}

// stateTestKeep is a Collector that keeps the batches it gets (retained).
type stateTestKeep struct{ batches []exec.Batch }

func (k *stateTestKeep) Collect(ctx context.Context, b exec.Batch) error {
	b.Rec.Retain()
	k.batches = append(k.batches, exec.Batch{Rec: b.Rec, Ops: slices.Clone(b.Ops)})
	return nil
}

func (k *stateTestKeep) CollectSignal(ctx context.Context, s exec.Signal) error { return nil }

type stateTestCase struct {
	name    string
	groupBy []int
	aggs    []AggSpec
	phase   AggPhase
	emit    AggEmit
	retract bool
	// backend is HashAggConfig.StateBackend; files, for the disk backend,
	// where its checkpoints keep their files.
	backend string
	files   exec.StateFiles
}

// onDisk says the case's state is on the disk backend: asked for, and of an
// operator that has it (hashAggOp.stateBackend).
func (c stateTestCase) onDisk() bool {
	return c.backend == StateDisk && c.updates() && c.phase != AggPartial && len(c.groupBy) > 0
}

// tc returns the task context of the operators of c.
func (c stateTestCase) tc(mem memory.Allocator) *exec.TaskContext {
	tc := testkit.TaskContext(mem)
	tc.StateFiles = c.files
	return tc
}

func (c stateTestCase) updates() bool { return c.emit == AggEmitUpdates }

func (c stateTestCase) groupCols() types.Schema {
	var s types.Schema
	for _, i := range c.groupBy {
		s = append(s, stateTestIn[i])
	}
	return s
}

// partialOut is the output schema of the partial phase of c.
func (c stateTestCase) partialOut() types.Schema {
	if c.updates() {
		return PartialUpdatesSchema(c.groupCols(), c.aggs, stateTestIn)
	}
	return PartialSchema(c.groupCols(), c.aggs, stateTestIn)
}

// op returns the operator under test (and, through partial, its input for the
// final phase).
func (c stateTestCase) op(t *testing.T, phase AggPhase) exec.Operator {
	cfg := HashAggConfig{GroupBy: c.groupBy, Aggs: c.aggs, Phase: phase, Emit: c.emit, StateBackend: c.backend}
	if phase == AggPartial {
		return opTestNew(t, "hash_agg", cfg, c.partialOut())
	}
	out := c.groupCols()
	if phase == AggFinal {
		cfg.GroupBy = make([]int, len(c.groupBy))
		for i := range cfg.GroupBy {
			cfg.GroupBy[i] = i
		}
	}
	for _, a := range c.aggs {
		out = append(out, types.Field{Name: fmt.Sprintf("c%d", len(out)), Type: a.Type})
	}
	return opTestNew(t, "hash_agg", cfg, out)
}

// finalInput turns raw batches into the partial states a final phase reads:
// in updates mode those one partial aggregation emits when flushed after each
// batch, else those of one partial aggregation per batch.
func (c stateTestCase) finalInput(t *testing.T, mem memory.Allocator, raw []exec.Batch) []exec.Batch {
	ctx := context.Background()
	keep := &stateTestKeep{}
	if c.updates() {
		p := c.op(t, AggPartial)
		if err := p.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		for _, b := range raw {
			if err := p.ProcessBatch(ctx, 0, b, keep); err != nil {
				t.Fatal(err)
			}
			if err := p.(exec.Flusher).Flush(ctx, keep); err != nil {
				t.Fatal(err)
			}
		}
		return keep.batches
	}
	for _, b := range raw {
		p := c.op(t, AggPartial)
		if err := p.Open(ctx, testkit.TaskContext(mem)); err != nil {
			t.Fatal(err)
		}
		err := p.ProcessBatch(ctx, 0, b, keep)
		if err == nil {
			err = p.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, keep)
		}
		p.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	return keep.batches
}

// stateTestFeed feeds batches to op, flushing it after batch i when flushes[i].
func stateTestFeed(t *testing.T, op exec.Operator, out exec.Collector, batches []exec.Batch, flushes []bool) {
	t.Helper()
	ctx := context.Background()
	for i, b := range batches {
		if err := op.ProcessBatch(ctx, 0, b, out); err != nil {
			t.Fatal(err)
		}
		if flushes != nil && flushes[i] {
			if err := op.(exec.Flusher).Flush(ctx, out); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func stateTestOpen(t *testing.T, op exec.Operator, mem memory.Allocator) {
	t.Helper()
	stateTestOpenTC(t, op, testkit.TaskContext(mem))
}

func stateTestOpenTC(t *testing.T, op exec.Operator, tc *exec.TaskContext) {
	t.Helper()
	if err := op.Open(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
}

// stateTestEnd sends op end of stream and closes it.
func stateTestEnd(t *testing.T, op exec.Operator, out exec.Collector) {
	t.Helper()
	ctx := context.Background()
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, out); err != nil {
		t.Fatal(err)
	}
	if err := op.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHashAggStateProperty: random input split at a random batch into a prefix
// and a suffix. Operator A takes the prefix and a barrier and is snapshotted;
// a fresh operator B restores the snapshot; both take the suffix and end. B
// must emit exactly what A does after the snapshot, and what A emitted before
// it followed by what B emitted must be what an operator C that took
// everything (with the barrier at the same point, but no snapshot) emitted.
// A snapshot of B right after the restore must be the same bytes as A's. In
// updates mode the operators are flushed at random points.
func TestHashAggStateProperty(t *testing.T) {
	every := stateTestConcat(stateTestSums, stateTestMinMax, stateTestDistinct, stateTestStringAgg)
	noDistinct := stateTestConcat(stateTestSums, stateTestMinMax)
	cases := []stateTestCase{
		{"complete/final/text key/every aggregate", []int{0}, every, AggComplete, AggEmitFinal, false, "", nil},
		{"complete/final/keys g,f,d/retractions", []int{1, 3, 4}, stateTestConcat(stateTestSums, stateTestDistinct), AggComplete, AggEmitFinal, true, "", nil},
		{"complete/final/no group by", nil, every, AggComplete, AggEmitFinal, false, "", nil},
		{"complete/final/keys k,b/no aggregates", []int{0, 7}, nil, AggComplete, AggEmitFinal, true, "", nil},
		{"complete/updates/keys t,b,k/retractions", []int{6, 7, 0}, stateTestSums, AggComplete, AggEmitUpdates, true, "", nil},
		{"complete/updates/text key", []int{0}, noDistinct, AggComplete, AggEmitUpdates, false, "", nil},
		{"complete/updates/no group by/retractions", nil, stateTestSums, AggComplete, AggEmitUpdates, true, "", nil},
		{"complete/updates/text key/no aggregates", []int{0}, nil, AggComplete, AggEmitUpdates, true, "", nil},
		{"partial/final/keys k,g", []int{0, 1}, noDistinct, AggPartial, AggEmitFinal, false, "", nil},
		{"partial/final/text key/retractions", []int{0}, stateTestSums, AggPartial, AggEmitFinal, true, "", nil},
		{"partial/updates/text key", []int{0}, noDistinct, AggPartial, AggEmitUpdates, false, "", nil},
		{"partial/updates/no group by", nil, stateTestSums, AggPartial, AggEmitUpdates, false, "", nil},
		{"final/final/keys k,g", []int{0, 1}, noDistinct, AggFinal, AggEmitFinal, false, "", nil},
		{"final/final/no group by", nil, noDistinct, AggFinal, AggEmitFinal, false, "", nil},
		{"final/updates/text key", []int{0}, noDistinct, AggFinal, AggEmitUpdates, false, "", nil},
		{"final/updates/keys d,s", []int{4, 5}, noDistinct, AggFinal, AggEmitUpdates, false, "", nil},
		{"final/updates/no group by", nil, stateTestSums, AggFinal, AggEmitUpdates, false, "", nil},
	}
	for _, backend := range []string{StateMemory, StateDisk} {
		for ci, tc := range cases {
			tc.backend = backend
			if backend == StateDisk && (!tc.onDisk() || slices.ContainsFunc(tc.aggs, func(a AggSpec) bool { return a.Distinct })) {
				continue
			}
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				for seed := range uint64(25) {
					if tc.backend == StateDisk {
						tc.files = stateTestFiles(t)
					}
					stateTestOne(t, tc, rand.New(rand.NewPCG(seed, uint64(ci))))
					if t.Failed() {
						t.Fatalf("seed %d", seed)
					}
				}
			})
		}
	}
}

// stateTestFiles returns the files of a task in a checkpoint store in a
// temporary directory.
func stateTestFiles(t *testing.T) exec.StateFiles {
	t.Helper()
	store, err := checkpoint.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store.Files("job", "1.0")
}

func stateTestOne(t *testing.T, tc stateTestCase, rng *rand.Rand) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	batches := stateTestInput(t, rng, mem, tc.retract)
	if tc.phase == AggFinal {
		raw := batches
		batches = tc.finalInput(t, mem, raw)
		testkit.Release(raw)
	}
	defer testkit.Release(batches)
	var flushes []bool
	if tc.updates() {
		flushes = make([]bool, len(batches))
		for i := range flushes {
			flushes[i] = rng.IntN(2) == 0
		}
	}
	cut := rng.IntN(len(batches) + 1)
	// A barrier flushes an aggregation in updates mode; without one, a partial
	// aggregation's snapshot holds its pending states, and one that emits at
	// end of stream does not care.
	barrier := exec.Signal{Kind: exec.Barrier, Checkpoint: 1}
	if (!tc.updates() || tc.phase == AggPartial) && rng.IntN(2) == 0 {
		barrier = exec.Signal{Kind: exec.Watermark, Watermark: 1}
	}

	a := tc.op(t, tc.phase)
	stateTestOpenTC(t, a, tc.tc(mem))
	before := &testkit.Collector{T: t}
	stateTestFeed(t, a, before, batches[:cut], flushes)
	if err := a.ProcessSignal(ctx, 0, barrier, before); err != nil {
		t.Fatal(err)
	}
	snap, err := a.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}

	b := tc.op(t, tc.phase)
	stateTestOpenTC(t, b, tc.tc(mem))
	if err := b.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
		t.Fatalf("RestoreState: %v", err)
	}
	again, err := b.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A disk state's snapshot names the files of its own DB.
	if !tc.onDisk() && !bytes.Equal(again, snap) {
		t.Errorf("the snapshot of the restored operator differs from the one it restored (%d bytes, %d)", len(again), len(snap))
	}

	var fl []bool
	if flushes != nil {
		fl = flushes[cut:]
	}
	afterA, afterB := &testkit.Collector{T: t}, &testkit.Collector{T: t}
	stateTestFeed(t, a, afterA, batches[cut:], fl)
	stateTestEnd(t, a, afterA)
	stateTestFeed(t, b, afterB, batches[cut:], fl)
	stateTestEnd(t, b, afterB)
	testkit.Equal(t, "after the restore", afterB.Rows, afterA.Rows)

	c := tc.op(t, tc.phase)
	stateTestOpenTC(t, c, tc.tc(mem))
	ref := &testkit.Collector{T: t}
	stateTestFeed(t, c, ref, batches[:cut], flushes)
	if err := c.ProcessSignal(ctx, 0, barrier, ref); err != nil {
		t.Fatal(err)
	}
	stateTestFeed(t, c, ref, batches[cut:], fl)
	stateTestEnd(t, c, ref)
	testkit.Equal(t, "before and after the restore", slices.Concat(before.Rows, afterB.Rows), ref.Rows)
	if len(afterB.Signals) != 1 || afterB.Signals[0].Kind != exec.EndOfStream {
		t.Errorf("restored operator's signals %v, want end of stream", afterB.Signals)
	}
}

// stateTestSnapshot returns the snapshot of a complete aggregation over batches.
func stateTestSnapshot(t *testing.T, mem memory.Allocator, cfg HashAggConfig, out types.Schema, batches []exec.Batch) []byte {
	t.Helper()
	ctx := context.Background()
	op := opTestNew(t, "hash_agg", cfg, out)
	stateTestOpen(t, op, mem)
	defer op.Close(ctx)
	stateTestFeed(t, op, &testkit.Collector{T: t}, batches, nil)
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// stateTestReseal recomputes the envelope's checksum of a blob edited in place.
func stateTestReseal(blob []byte) {
	binary.LittleEndian.PutUint32(blob[6:], crc32.Checksum(blob[10:], crc32.MakeTable(crc32.Castagnoli)))
}

func TestHashAggStateBadBlobs(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	aggs := stateTestConcat(stateTestSums, stateTestMinMax, stateTestDistinct)
	cfg := HashAggConfig{GroupBy: []int{0, 1}, Aggs: aggs}
	tc := stateTestCase{groupBy: cfg.GroupBy, aggs: aggs, phase: AggComplete, emit: AggEmitFinal}
	out := append(tc.groupCols(), aggTestOut(func() []types.Type {
		var ts []types.Type
		for _, a := range aggs {
			ts = append(ts, a.Type)
		}
		return ts
	}()...)...)
	batches := stateTestInput(t, rand.New(rand.NewPCG(3, 4)), mem, false)
	defer testkit.Release(batches)
	good := stateTestSnapshot(t, mem, cfg, out, batches)

	view := NewViewState(types.Schema{{Name: "w", Type: types.StringType}})
	viewBlob, err := view.snapshotState(mem)
	if err != nil {
		t.Fatal(err)
	}
	other := stateTestSnapshot(t, mem, HashAggConfig{GroupBy: []int{0, 1}, Aggs: stateTestSums},
		append(tc.groupCols(), aggTestOut(types.Int64Type, types.Int64Type, aggTestDec0, types.Float64Type, aggTestDec2,
			types.Float64Type, aggTestDec2, types.Float64Type, types.DecimalType(38, 3))...), batches)
	newVersion := slices.Clone(good)
	binary.LittleEndian.PutUint16(newVersion[4:], hashAggStateVersion+1)
	stateTestReseal(newVersion)

	// One operator takes every bad blob: a failed restore leaves it fresh.
	op := opTestNew(t, "hash_agg", cfg, out)
	stateTestOpen(t, op, mem)
	restore := op.(exec.Checkpointed).RestoreState
	bad := map[string][]byte{
		"nil":          nil,
		"garbage":      []byte("garbage, not a checkpoint state at all"),
		"view state":   viewBlob,
		"new version":  newVersion,
		"other config": other,
		"trailing":     append(slices.Clone(good), 0),
	}
	for name, blob := range bad {
		if err := restore(ctx, blob); !errors.Is(err, state.ErrBadState) {
			t.Errorf("%s: err = %v, want a bad state", name, err)
		}
	}
	if err := restore(ctx, newVersion); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("new version: err = %v, want one naming the version", err)
	}
	for n := range len(good) {
		if err := restore(ctx, good[:n]); !errors.Is(err, state.ErrBadState) {
			t.Fatalf("truncated to %d of %d bytes: err = %v, want a bad state", n, len(good), err)
		}
	}
	for i := range len(good) {
		blob := slices.Clone(good)
		blob[i] ^= 1 << (i % 8)
		if err := restore(ctx, blob); !errors.Is(err, state.ErrBadState) {
			t.Fatalf("bit %d of byte %d flipped: err = %v, want a bad state", i%8, i, err)
		}
	}

	// After all that, the good blob restores and the operator ends with the
	// same rows as the one snapshotted.
	if err := restore(ctx, good); err != nil {
		t.Fatal(err)
	}
	got := &testkit.Collector{T: t}
	stateTestEnd(t, op, got)
	ref := opTestNew(t, "hash_agg", cfg, out)
	want, err := testkit.Run(t, ref, mem, batches...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "restored after bad blobs", got.Rows, want.Rows)
}

// TestHashAggStateInconsistent restores blobs with a sound envelope whose
// sections do not agree with each other or with the operator, as a buggy
// writer could make: each is an error, and the operator stays fresh.
func TestHashAggStateInconsistent(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	tc := stateTestCase{groupBy: []int{0, 6}, aggs: stateTestConcat(stateTestSums, stateTestMinMax, stateTestDistinct),
		phase: AggComplete, emit: AggEmitFinal}
	batches := stateTestInput(t, rand.New(rand.NewPCG(5, 6)), mem, false)
	defer testkit.Release(batches)
	op := tc.op(t, AggComplete)
	stateTestOpen(t, op, mem)
	stateTestFeed(t, op, &testkit.Collector{T: t}, batches, nil)
	good, err := op.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	op.Close(ctx)
	sections, err := state.Decode("test", hashAggStateMagic, hashAggStateVersion, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(sections) < 3 {
		t.Fatalf("%d sections, want a header, the groups and count(DISTINCT)'s pairs", len(sections))
	}
	var h hashAggStateHeader
	if err := json.Unmarshal(sections[0], &h); err != nil {
		t.Fatal(err)
	}
	header := func(edit func(h *hashAggStateHeader)) []byte {
		h2 := h
		h2.Tables = slices.Clone(h.Tables)
		edit(&h2)
		js, err := json.Marshal(h2)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	with := func(i int, sec []byte) [][]byte {
		out := slices.Clone(sections)
		out[i] = sec
		return out
	}
	bad := map[string][][]byte{
		"no sections":         nil,
		"header not JSON":     with(0, []byte("{")),
		"more groups":         with(0, header(func(h *hashAggStateHeader) { h.Groups++ })),
		"no key columns":      with(0, header(func(h *hashAggStateHeader) { h.KeyColumns = false })),
		"other phase":         with(0, header(func(h *hashAggStateHeader) { h.Phase = AggPartial })),
		"updates":             with(0, header(func(h *hashAggStateHeader) { h.Updates = true })),
		"a table more":        with(0, header(func(h *hashAggStateHeader) { h.Tables = append(h.Tables, "agg0.pairs") })),
		"tables swapped":      with(0, header(func(h *hashAggStateHeader) { slices.Reverse(h.Tables) })),
		"groups not IPC":      with(1, []byte("not arrow")),
		"pairs as the groups": with(1, sections[2]),
		"groups as pairs":     with(2, sections[1]),
		"a section missing":   sections[:len(sections)-1],
	}
	for name, secs := range bad {
		op := tc.op(t, AggComplete)
		stateTestOpen(t, op, mem)
		err := op.(exec.Checkpointed).RestoreState(ctx, state.Encode(hashAggStateMagic, hashAggStateVersion, secs...))
		if !errors.Is(err, state.ErrBadState) {
			t.Errorf("%s: err = %v, want a bad state", name, err)
		}
		// Still fresh: it aggregates as a new one does.
		got, err := testkit.Run(t, op, mem, batches...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := testkit.Run(t, tc.op(t, AggComplete), mem, batches...)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Equal(t, name+": after the failed restore", got.Rows, want.Rows)
	}
}

func TestHashAggStateErrors(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	tc := stateTestCase{groupBy: []int{0}, aggs: stateTestSums, phase: AggComplete, emit: AggEmitUpdates}
	batches := testkit.Batches(t, mem, stateTestIn, `[{"k": "a", "x": 1}, {"k": "b", "x": 2}]`, `[{"k": "a", "x": 3}]`)
	defer testkit.Release(batches)

	op := tc.op(t, AggComplete)
	if _, err := op.(exec.Checkpointed).SnapshotState(ctx, 1); err == nil {
		t.Error("snapshot before Open: no error")
	}
	if err := op.(exec.Checkpointed).RestoreState(ctx, nil); err == nil {
		t.Error("restore before Open: no error")
	}
	stateTestOpen(t, op, mem)
	defer op.Close(ctx)

	// Changes not flushed are not snapshotted: an error, until the barrier
	// flushes them, before it passes on.
	c := &testkit.Collector{T: t}
	if err := op.ProcessBatch(ctx, 0, batches[0], c); err != nil {
		t.Fatal(err)
	}
	if _, err := op.(exec.Checkpointed).SnapshotState(ctx, 1); err == nil || !strings.Contains(err.Error(), "not flushed") {
		t.Errorf("snapshot with changes pending: err = %v", err)
	}
	var rowsAtBarrier []int
	sigs := opTestSignalFunc(func(s exec.Signal) { rowsAtBarrier = append(rowsAtBarrier, len(c.Rows)) })
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Barrier, Checkpoint: 1}, &opTestSplit{c, sigs}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rowsAtBarrier, []int{2}) {
		t.Errorf("rows out when the barrier passed: %v, want [2]", rowsAtBarrier)
	}
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}

	// A restore is for a fresh operator.
	if err := op.(exec.Checkpointed).RestoreState(ctx, snap); err == nil {
		t.Error("restore after input: no error")
	}

	// An ended operator's snapshot restores an ended one.
	stateTestEnd(t, op, c)
	ended, err := op.(exec.Checkpointed).SnapshotState(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	b := tc.op(t, AggComplete)
	stateTestOpen(t, b, mem)
	defer b.Close(ctx)
	if err := b.(exec.Checkpointed).RestoreState(ctx, ended); err != nil {
		t.Fatal(err)
	}
	if err := b.ProcessBatch(ctx, 0, batches[1], c); err == nil {
		t.Error("batch after restoring an ended operator: no error")
	}
}

// opTestSplit sends batches to one collector and signals to another.
type opTestSplit struct {
	batches exec.Collector
	signals exec.Collector
}

func (s *opTestSplit) Collect(ctx context.Context, b exec.Batch) error {
	return s.batches.Collect(ctx, b)
}
func (s *opTestSplit) CollectSignal(ctx context.Context, sig exec.Signal) error {
	return s.signals.CollectSignal(ctx, sig)
}

// opTestSignalFunc is a Collector that hands signals to a function.
type opTestSignalFunc func(s exec.Signal)

func (f opTestSignalFunc) Collect(ctx context.Context, b exec.Batch) error { return nil }
func (f opTestSignalFunc) CollectSignal(ctx context.Context, s exec.Signal) error {
	f(s)
	return nil
}

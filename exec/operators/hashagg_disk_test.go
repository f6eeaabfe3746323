package operators

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestHashAggDiskEviction: a streaming GROUP BY over far more groups than its
// disk backend's cache holds, on random input with retractions, checkpointed
// at random points and restored each time into a fresh operator (the store
// pruned to the newest checkpoint, so restores read an incremental chain
// whose older files pruning kept): the changelog it emits, applied to a
// multiset, must never retract a row that is not there and must end equal to
// what the memory backend's changelog ends as, which the memory backend's own
// tests hold against a bounded aggregation.
func TestHashAggDiskEviction(t *testing.T) {
	for seed := range uint64(6) {
		retract := seed%3 != 2
		t.Run(fmt.Sprintf("%d/retract=%t", seed, retract), func(t *testing.T) {
			aggDiskEvictionRun(t, seed, retract)
		})
	}
}

func aggDiskEvictionRun(t *testing.T, seed uint64, retract bool) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 11))
	var live []string
	var batches []exec.Batch
	for range 30 {
		var rows []string
		var ops []exec.ChangeKind
		for range 1 + rng.IntN(60) {
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
			ops = append(ops, exec.Insert)
		}
		b := testkit.Batches(t, mem, stateTestIn, "["+strings.Join(rows, ",")+"]")[0]
		b.Ops = ops
		batches = append(batches, b)
	}
	defer testkit.Release(batches)

	// With retractions, min and max keep their groups' values, as the
	// DISTINCT aggregates do.
	minMax := stateTestMinMax
	if retract {
		minMax = slices.Clone(minMax)
		for i := range minMax {
			minMax[i].Retract = true
		}
	}
	aggs := stateTestConcat(stateTestSums, stateTestDistinct, minMax)
	if !retract {
		aggs = stateTestConcat(aggs, stateTestStringAgg) // it takes no retractions
	}
	groupBy := []int{2, 0, 4} // x, k, d: hundreds of groups
	out := types.Schema{}
	for _, c := range groupBy {
		out = append(out, stateTestIn[c])
	}
	for _, a := range aggs {
		out = append(out, types.Field{Name: fmt.Sprintf("c%d", len(out)), Type: a.Type})
	}
	cfg := HashAggConfig{GroupBy: groupBy, Aggs: aggs, Emit: AggEmitUpdates}

	// The memory backend.
	want := &aggTestView{t: t}
	ref := opTestNew(t, "hash_agg", cfg, out)
	if err := ref.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	aggUpdatesRun(t, ref, want, batches, nil)
	ref.Close(ctx)

	// The disk backend, with a cache of a few dozen groups.
	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg.StateBackend = StateDisk
	tc := testkit.TaskContext(mem)
	tc.StateFiles = store.Files("job", "1.0")
	tc.StateMemory = 16 << 10
	tc.SpillDir = t.TempDir()
	open := func() *hashAggOp {
		op := opTestNew(t, "hash_agg", cfg, out)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op.(*hashAggOp)
	}
	op := open()
	defer func() { op.Close(ctx) }()
	if op.disk == nil {
		t.Fatal("the operator is not on the disk backend")
	}
	got := &aggTestView{t: t}
	evictions, restores := 0, 0
	for i, b := range batches {
		if err := op.ProcessBatch(ctx, 0, b, got); err != nil {
			t.Fatal(err)
		}
		evictions += op.disk.evictions
		op.disk.evictions = 0
		if rng.IntN(2) == 0 {
			if err := op.Flush(ctx, got); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(4) != 0 {
			continue
		}
		id := int64(i + 1)
		if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Barrier, Checkpoint: id}, got); err != nil {
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
		op.Close(ctx)
		op = open()
		if err := op.RestoreState(ctx, snap); err != nil {
			t.Fatalf("restoring checkpoint %d: %v", id, err)
		}
		restores++
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, got); err != nil {
		t.Fatal(err)
	}
	if evictions == 0 || restores == 0 {
		t.Fatalf("%d evictions, %d restores: the test does not test the disk backend", evictions, restores)
	}
	testkit.Equal(t, "disk against memory", got.rows(), want.rows())
}

// TestHashAggStateLimit: a streaming GROUP BY on the memory backend whose
// groups outgrow the TaskManager's bound fails with ErrOutOfMemory naming
// the operator and state_backend = 'disk'; on the disk backend the same
// input finishes.
func TestHashAggStateLimit(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	var rows []string
	for k := range 5000 {
		rows = append(rows, fmt.Sprintf(`{"k": "key %d", "g": 1, "x": %d}`, k, k))
	}
	batches := testkit.Batches(t, mem, aggTestIn, "["+strings.Join(rows, ",")+"]")
	defer testkit.Release(batches)
	aggs := []AggSpec{{Func: "sum", Arg: 2, Type: aggTestDec0}}
	out := aggTestOut(types.StringType, aggTestDec0)
	for _, backend := range []string{StateMemory, StateDisk} {
		t.Run(backend, func(t *testing.T) {
			cfg := HashAggConfig{GroupBy: []int{0}, Aggs: aggs, Emit: AggEmitUpdates, StateBackend: backend}
			spec := opTestSpec("hash_agg", cfg, out)
			spec.Label = "hash_agg complete group=k"
			op, err := builtins().NewOperator(spec)
			if err != nil {
				t.Fatal(err)
			}
			tc := testkit.TaskContext(mem)
			tc.StateLimit = 64 << 10
			tc.StateMemory = 256 << 10
			tc.SpillDir = t.TempDir()
			if err := op.Open(ctx, tc); err != nil {
				t.Fatal(err)
			}
			defer op.Close(ctx)
			view := &aggTestView{t: t}
			err = op.ProcessBatch(ctx, 0, batches[0], view)
			if backend == StateDisk {
				if err != nil {
					t.Fatal(err)
				}
				if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, view); err != nil {
					t.Fatal(err)
				}
				if n := len(view.rows()); n != 5000 {
					t.Fatalf("%d groups, want 5000", n)
				}
				return
			}
			if !errors.Is(err, exec.ErrOutOfMemory) || !strings.Contains(err.Error(), "hash_agg complete group=k") ||
				!strings.Contains(err.Error(), "SET state_backend = 'disk'") {
				t.Fatalf("ProcessBatch: %v", err)
			}
		})
	}
}

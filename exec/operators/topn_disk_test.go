package operators

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestTopNDiskLarge: a Top-N (the 3 largest x per k, with the row number,
// over an input that retracts, so every row is kept) on the disk backend
// whose rows take more than four times its --state-memory: 40000 rows over
// 5000 partitions, checkpointed twice (the second incremental on the
// first), then most rows deleted, top rows among them; then the operator
// "fails", a new one restores the second checkpoint and the input since it
// is replayed, as a job does. The output applied must be, after each phase,
// exactly the top a brute-force reference sorts from every row held; the
// cache must stay within its bound and have been emptied, and the DB hold
// more than four times the memory.
func TestTopNDiskLarge(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const parts, perPart = 5000, 8
	const stateMemory = 256 << 10
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}, {Name: "v", Type: types.StringType}}
	out := append(slices.Clone(in), types.Field{Name: "rn", Type: types.Int64Type})
	cfg := TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1, Desc: true}}, Lo: 1, Hi: 3, Rank: true, Retracts: true, StateBackend: StateDisk}
	files := stateTestFiles(t)
	open := func() *topnOp {
		op := opTestNew(t, "topn", cfg, out).(*topnOp)
		tc := testkit.TaskContext(mem)
		tc.StateFiles, tc.StateMemory, tc.SpillDir = files, stateMemory, t.TempDir()
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()

	// The reference: each partition's rows by x (distinct within a
	// partition, so no ties).
	type row struct {
		k string
		x int64
	}
	held := map[row]bool{}
	json := func(r row) string {
		return fmt.Sprintf(`{"k": %q, "x": %d, "v": "payload of %s/%d"}`, r.k, r.x, r.k, r.x)
	}
	want := func() []string {
		byPart := map[string][]int64{}
		for r := range held {
			byPart[r.k] = append(byPart[r.k], r.x)
		}
		var objs []string
		for k, xs := range byPart {
			slices.Sort(xs)
			slices.Reverse(xs)
			for i, x := range xs[:min(3, len(xs))] {
				objs = append(objs, fmt.Sprintf(`{"k": %q, "x": %d, "v": "payload of %s/%d", "rn": %d}`, k, x, k, x, i+1))
			}
		}
		return topnRows(t, out, objs)
	}
	view := &aggTestView{t: t}
	feed := func(rs []row, op *topnOp, del bool) {
		t.Helper()
		for lo := 0; lo < len(rs); lo += 500 {
			chunk := rs[lo:min(len(rs), lo+500)]
			objs := make([]string, len(chunk))
			ops := make([]exec.ChangeKind, len(chunk))
			for i, r := range chunk {
				objs[i] = json(r)
				ops[i] = exec.Insert
				if del {
					ops[i] = exec.Delete
				}
			}
			rec := testkit.Record(t, mem, in, "["+strings.Join(objs, ",")+"]")
			err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec, Ops: ops}, view)
			rec.Release()
			if err == nil {
				err = op.Flush(ctx, view)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := op.cacheBytes(); n > op.disk.limit {
				t.Fatalf("the cache holds %d bytes after a batch, past its bound of %d", n, op.disk.limit)
			}
		}
	}
	apply := func(rs []row, del bool) {
		for _, r := range rs {
			if del {
				delete(held, r)
			} else {
				held[r] = true
			}
		}
	}
	checkpoint := func(id int64) []byte {
		t.Helper()
		p, err := op.SnapshotStateAsync(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		blob, _, err := p(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return blob
	}

	// Rows arrive in random order: x is distinct per row, not increasing.
	rng := rand.New(rand.NewPCG(27, 5))
	var all []row
	for i, x := range rng.Perm(parts * perPart) {
		all = append(all, row{k: fmt.Sprintf("k%04d", i%parts), x: int64(x)})
	}
	half := len(all) / 2
	feed(all[:half], op, false)
	apply(all[:half], false)
	checkpoint(1)
	feed(all[half:], op, false)
	apply(all[half:], false)
	testkit.Equal(t, "after the inserts", view.rows(), want())
	blob := checkpoint(2)
	atCheckpoint := maps.Clone(view.have)

	// Most rows go, a partition's top ones among them.
	var dels []row
	for _, r := range all {
		if r.x%4 != 0 {
			dels = append(dels, r)
		}
	}
	rng.Shuffle(len(dels), func(i, j int) { dels[i], dels[j] = dels[j], dels[i] })
	feed(dels, op, true)
	apply(dels, true)
	testkit.Equal(t, "after the deletes", view.rows(), want())
	if op.disk.evictions == 0 {
		t.Fatal("the cache was never emptied")
	}
	op.Close(ctx)

	// A restore from the second checkpoint, and the deletes replayed.
	op = open()
	if err := op.RestoreState(ctx, blob); err != nil {
		t.Fatal(err)
	}
	var stored int64
	if err := op.disk.db.Scan(nil, nil, func(k, v []byte) error {
		stored += int64(len(k) + len(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if stored < 4*stateMemory {
		t.Fatalf("the Top-N's checkpoint holds %d bytes, not four times its %d", stored, stateMemory)
	}
	view.have = atCheckpoint
	feed(dels, op, true)
	testkit.Equal(t, "after the deletes replayed on the restored operator", view.rows(), want())
}

// TestTopNStateLimit: a Top-N on the memory backend whose rows outgrow the
// TaskManager's bound fails with ErrOutOfMemory naming the operator and
// state_backend = 'disk'; the same rows on the disk backend go through.
func TestTopNStateLimit(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "v", Type: types.StringType}}
	var objs []string
	for i := range 5000 {
		objs = append(objs, fmt.Sprintf(`{"k": %d, "v": "row %d"}`, i%100, i))
	}
	for _, backend := range []string{StateMemory, StateDisk} {
		cfg := TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1}}, Lo: 1, Hi: 2, Retracts: true, StateBackend: backend}
		spec := opTestSpec("topn", cfg, in)
		spec.Label = "topn partition=[k] order=v rows 1 to 2"
		op, err := builtins().NewOperator(spec)
		if err != nil {
			t.Fatal(err)
		}
		tc := testkit.TaskContext(mem)
		tc.StateLimit, tc.StateFiles, tc.SpillDir = 64<<10, stateTestFiles(t), t.TempDir()
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		rec := testkit.Record(t, mem, in, "["+strings.Join(objs, ",")+"]")
		err = op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, &aggTestView{t: t})
		rec.Release()
		op.Close(ctx)
		if backend == StateDisk {
			if err != nil {
				t.Errorf("on disk: %v", err)
			}
			continue
		}
		if !errors.Is(err, exec.ErrOutOfMemory) || !strings.Contains(err.Error(), spec.Label) || !strings.Contains(err.Error(), "SET state_backend = 'disk'") {
			t.Errorf("on memory: %v", err)
		}
	}
}

// TestTopNRestoreAcrossBackends: a memory backend's checkpoint restores into
// a Top-N on the disk backend (a job that SET state_backend = 'disk' since),
// whose cache of nothing then writes every partition to the DB: the rows
// that follow, deletes of top rows among them, must give the reference's
// top. A disk checkpoint restored into the memory backend is refused with
// an error naming the setting.
func TestTopNRestoreAcrossBackends(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}, {Name: "v", Type: types.Int64Type}}
	out := append(slices.Clone(in), types.Field{Name: "rn", Type: types.Int64Type})
	cfg := TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1, Desc: true}}, Lo: 1, Hi: 2, Rank: true, Retracts: true}
	files := stateTestFiles(t)
	ref := &topnRef{cfg: cfg}
	view := &aggTestView{t: t}
	rng := rand.New(rand.NewPCG(3, 4))
	// feed sends n random rows of the first keys partitions.
	feed := func(op *topnOp, n, keys int) {
		t.Helper()
		var rows []string
		var ops []exec.ChangeKind
		for range n {
			if len(ref.rows) > 0 && rng.IntN(3) == 0 && keys == 5 {
				r := ref.topRow(rng)
				ref.remove(r)
				rows, ops = append(rows, r.json(0)), append(ops, exec.Delete)
				continue
			}
			r := topnRefRow{k: string(rune('a' + rng.IntN(keys))), x: int64(rng.IntN(50)), v: int64(rng.IntN(3))}
			ref.add(r)
			rows, ops = append(rows, r.json(0)), append(ops, exec.Insert)
		}
		b := testkit.Batches(t, mem, in, "["+strings.Join(rows, ",")+"]")[0]
		b.Ops = ops
		err := op.ProcessBatch(ctx, 0, b, view)
		b.Rec.Release()
		if err == nil {
			err = op.Flush(ctx, view)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	onMemory := topnOpen(t, mem, cfg, out, "memory", files)
	for range 5 {
		feed(onMemory, 40, 5)
	}
	snap, err := onMemory.SnapshotState(ctx, 1)
	onMemory.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onDisk := topnOpen(t, mem, cfg, out, "disk-nocache", files)
	defer onDisk.Close(ctx)
	if err := onDisk.RestoreState(ctx, snap); err != nil {
		t.Fatal(err)
	}
	// The first batch touches one partition; the others must reach the DB
	// all the same when the cache is emptied after it.
	for i := range 5 {
		feed(onDisk, 40, min(1+4*i, 5))
		testkit.Equal(t, "on disk after a memory checkpoint", view.rows(), topnRows(t, out, ref.top(nil)))
	}
	if onDisk.disk.evictions == 0 {
		t.Fatal("the restored partitions never went to the DB")
	}
	diskSnap, err := onDisk.SnapshotState(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	back := topnOpen(t, mem, cfg, out, "memory", files)
	defer back.Close(ctx)
	if err := back.RestoreState(ctx, diskSnap); err == nil || !strings.Contains(err.Error(), "SET state_backend = 'disk'") {
		t.Errorf("a disk checkpoint restored on memory: %v", err)
	}
}

// TestTopNDiskPartitionBound: on the disk backend a partition is loaded and
// written whole, so one whose rows outgrow the cache (a Top-N without
// PARTITION BY over an input that retracts keeps every row in one) fails
// with ErrOutOfMemory naming the operator and the way out, once the cache
// is emptied, rather than hold memory without bound.
func TestTopNDiskPartitionBound(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "v", Type: types.StringType}}
	cfg := TopNConfig{Order: []SortKeySpec{{Col: 0}}, Lo: 1, Hi: 2, Retracts: true, StateBackend: StateDisk}
	spec := opTestSpec("topn", cfg, in)
	spec.Label = "topn partition=[] order=k rows 1 to 2"
	op, err := builtins().NewOperator(spec)
	if err != nil {
		t.Fatal(err)
	}
	tc := testkit.TaskContext(mem)
	tc.StateMemory, tc.StateFiles, tc.SpillDir = 256<<10, stateTestFiles(t), t.TempDir()
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	view := &aggTestView{t: t}
	for batch := range 20 {
		var objs []string
		for i := range 500 {
			objs = append(objs, fmt.Sprintf(`{"k": %d, "v": "a row of some length, number %d"}`, batch*500+i, i))
		}
		rec := testkit.Record(t, mem, in, "["+strings.Join(objs, ",")+"]")
		err = op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, view)
		rec.Release()
		if err != nil {
			break
		}
	}
	if !errors.Is(err, exec.ErrOutOfMemory) || !strings.Contains(err.Error(), spec.Label) || !strings.Contains(err.Error(), "PARTITION BY") {
		t.Fatalf("one partition past the cache: %v", err)
	}
}

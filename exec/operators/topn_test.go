package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// topnRef is the reference a Top-N test checks the operator against: every
// row held, with its arrival number, whose top it sorts again from scratch.
// Ties go by arrival, and a retraction removes the latest-arrived equal row,
// as topn's contract says.
type topnRef struct {
	cfg  TopNConfig
	rows []topnRefRow
	seq  int
}

type topnRefRow struct {
	k   any // string or nil
	x   any // int64 or nil
	v   int64
	end int64 // window end, seconds; 0 without windows
	seq int
}

func (r topnRefRow) json(rank int) string {
	m := map[string]any{"k": r.k, "x": r.x, "v": r.v}
	if r.end != 0 {
		m["we"] = fmt.Sprintf("1970-01-01 00:00:%02d", r.end)
	}
	if rank > 0 {
		m["rn"] = rank
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func (f *topnRef) add(r topnRefRow) {
	f.seq++
	r.seq = f.seq
	f.rows = append(f.rows, r)
}

func (f *topnRef) remove(r topnRefRow) {
	at := -1
	for i, h := range f.rows {
		if h.k == r.k && h.x == r.x && h.v == r.v && h.end == r.end && (at < 0 || h.seq > f.rows[at].seq) {
			at = i
		}
	}
	if at >= 0 {
		f.rows = slices.Delete(f.rows, at, at+1)
	}
}

// partition returns the partition of r: by its window's end, and by k
// when column 0 is a partition key.
func (f *topnRef) partition(r topnRefRow) string {
	key := fmt.Sprint(r.end)
	if slices.Contains(f.cfg.Partition, 0) {
		key += "/" + fmt.Sprint(r.k)
	}
	return key
}

// less orders two rows of a partition by the sort key, then by arrival.
func (f *topnRef) less(a, b topnRefRow) int {
	if c := f.keyOrder(a, b); c != 0 {
		return c
	}
	return a.seq - b.seq
}

// keyOrder orders two rows by the sort key alone.
func (f *topnRef) keyOrder(a, b topnRefRow) int {
	spec := f.cfg.Order[0]
	switch {
	case a.x == nil && b.x == nil:
	case a.x == nil || b.x == nil:
		if (a.x == nil) == spec.NullsFirst {
			return -1
		}
		return 1
	case a.x.(int64) != b.x.(int64):
		c := 1
		if a.x.(int64) < b.x.(int64) {
			c = -1
		}
		if spec.Desc {
			c = -c
		}
		return c
	}
	return 0
}

// top returns the rows of ranks Lo to Hi of every partition (by k and end),
// as JSON objects of the output's columns.
func (f *topnRef) top(only func(topnRefRow) bool) []string {
	parts := map[string][]topnRefRow{}
	for _, r := range f.rows {
		if only != nil && !only(r) {
			continue
		}
		parts[f.partition(r)] = append(parts[f.partition(r)], r)
	}
	var out []string
	for _, rs := range parts {
		slices.SortFunc(rs, f.less)
		for j, r := range rs {
			n := j + 1 // ROW_NUMBER()
			if f.cfg.Func == "rank" {
				// 1 + the rows before it.
				n = 1 + slices.IndexFunc(rs, func(o topnRefRow) bool { return f.keyOrder(o, r) == 0 })
			}
			if int64(n) < f.cfg.Lo || int64(n) > f.cfg.Hi {
				continue
			}
			rank := 0
			if f.cfg.Rank {
				rank = n
			}
			out = append(out, r.json(rank))
		}
	}
	return out
}

// topnRows formats JSON objects as testkit.Rows does the operator's.
func topnRows(t *testing.T, s types.Schema, objs []string) []string {
	out := []string{}
	if len(objs) == 0 {
		return out
	}
	mem := testkit.Mem()
	rec := testkit.Record(t, mem, s, "["+strings.Join(objs, ",")+"]")
	out = testkit.Rows(exec.Batch{Rec: rec})
	rec.Release()
	slices.Sort(out)
	return out
}

// topnBackends are the state backends a Top-N test runs against: memory,
// disk with the default cache, and disk with a cache of nothing, which
// writes every partition back and empties the cache after each batch.
var topnBackends = []string{"memory", "disk", "disk-nocache"}

// topnOpen makes and opens a topn on backend (topnBackends), its disk state
// in files.
func topnOpen(t *testing.T, mem memory.Allocator, cfg TopNConfig, out types.Schema, backend string, files exec.StateFiles) *topnOp {
	t.Helper()
	if backend != "memory" {
		cfg.StateBackend = StateDisk
	}
	op := opTestNew(t, "topn", cfg, out).(*topnOp)
	tc := testkit.TaskContext(mem)
	// A small state memory: pebble's memtables are sized by it, and a
	// DB opened per case with the default's would take most of the run.
	tc.StateFiles, tc.SpillDir, tc.StateMemory = files, t.TempDir(), 4<<20
	if err := op.Open(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
	if backend != "memory" && !cfg.Final && op.disk == nil {
		t.Fatal("the operator is not on the disk backend")
	}
	if backend == "disk-nocache" && op.disk != nil {
		op.disk.limit = 0
	}
	return op
}

// TestTopNRandom feeds Top-N random batches whose tops change in every way
// (ties, NULLs, rows entering and leaving, retractions of top rows when the
// input has them), flushing at random, and after each flush applies what
// the operator emitted to a multiset, which must hold what the reference
// recomputes from scratch. At random cut points the operator is
// snapshotted, closed, and a new one restored from the snapshot (on the
// disk backend after a flush, as a barrier does). Each case runs on every
// backend (topnBackends).
func TestTopNRandom(t *testing.T) {
	for _, backend := range topnBackends {
		t.Run(backend, func(t *testing.T) { testTopNRandom(t, backend) })
	}
}

func testTopNRandom(t *testing.T, backend string) {
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}, {Name: "v", Type: types.Int64Type}}
	seeds := uint64(120)
	if backend != "memory" {
		// Each case opens a DB per restore, slow on a busy disk; 40 seeds
		// still take every configuration below.
		seeds = 40
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 11))
		cfg := TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1, Desc: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0}},
			Lo: 1 + int64(rng.IntN(2)), Rank: rng.IntN(2) == 0, Retracts: seed%3 != 0, Final: seed%7 == 0}
		cfg.Hi = cfg.Lo + int64(rng.IntN(3))
		if seed%4 == 1 {
			cfg.Func = "rank"
		}
		if seed%5 == 0 {
			cfg.Partition = nil
		}
		t.Run(fmt.Sprintf("%d-%+v", seed, cfg), func(t *testing.T) {
			if seed%2 == 0 { // compact the rows no longer held at every chance
				defer func(s int) { compactSlack = s }(compactSlack)
				compactSlack = 0
			}
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			ctx := context.Background()
			out := slices.Clone(in)
			if cfg.Rank {
				out = append(out, types.Field{Name: "rn", Type: types.Int64Type})
			}
			files := stateTestFiles(t)
			open := func() exec.Operator { return topnOpen(t, mem, cfg, out, backend, files) }
			op := open()
			defer func() { op.Close(ctx) }()
			ref := &topnRef{cfg: cfg}
			view := &aggTestView{t: t}
			check := func(what string) {
				t.Helper()
				testkit.Equal(t, what, view.rows(), topnRows(t, out, ref.top(nil)))
			}
			for batch := range 1 + rng.IntN(25) {
				var rows []string
				var ops []exec.ChangeKind
				for range 1 + rng.IntN(12) {
					if cfg.Retracts && len(ref.rows) > 0 && rng.IntN(3) == 0 {
						// Often one of the top rows.
						r := ref.rows[rng.IntN(len(ref.rows))]
						if rng.IntN(2) == 0 {
							r = ref.topRow(rng)
						}
						ref.remove(r)
						rows = append(rows, r.json(0))
						ops = append(ops, []exec.ChangeKind{exec.Delete, exec.UpdateBefore}[rng.IntN(2)])
						continue
					}
					r := topnRefRow{k: string(rune('a' + rng.IntN(3))), v: int64(rng.IntN(3))}
					if rng.IntN(6) == 0 {
						r.k = nil
					}
					if rng.IntN(8) > 0 {
						r.x = int64(rng.IntN(8))
					}
					ref.add(r)
					rows = append(rows, r.json(0))
					ops = append(ops, []exec.ChangeKind{exec.Insert, exec.UpdateAfter}[rng.IntN(2)])
				}
				b := testkit.Batches(t, mem, in, "["+strings.Join(rows, ",")+"]")[0]
				b.Ops = ops
				err := op.ProcessBatch(ctx, 0, b, view)
				b.Rec.Release()
				if err != nil {
					t.Fatal(err)
				}
				if !cfg.Final && rng.IntN(2) == 0 {
					if err := op.(exec.Flusher).Flush(ctx, view); err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("after batch %d", batch))
				}
				if rng.IntN(4) == 0 {
					if backend != "memory" && !cfg.Final {
						if err := op.(exec.Flusher).Flush(ctx, view); err != nil {
							t.Fatal(err)
						}
					}
					snap, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(batch)+1)
					if err != nil {
						t.Fatal(err)
					}
					op.Close(ctx)
					op = open()
					if err := op.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, view); err != nil {
				t.Fatal(err)
			}
			check("at the end")
		})
	}
}

// topRow picks one of the rows in some partition's top.
func (f *topnRef) topRow(rng *rand.Rand) topnRefRow {
	cfg := f.cfg
	cfg.Rank = false
	g := &topnRef{cfg: cfg, rows: f.rows}
	var tops []topnRefRow
	parts := map[string][]topnRefRow{}
	for _, r := range g.rows {
		parts[g.partition(r)] = append(parts[g.partition(r)], r)
	}
	for _, rs := range parts {
		slices.SortFunc(rs, g.less)
		tops = append(tops, rs[:min(len(rs), int(cfg.Hi))]...)
	}
	return tops[rng.IntN(len(tops))]
}

// TestWindowTopNRandom feeds window_topn random rows of windows ending at
// 10 to 50 s, and watermarks; each window's top must come out once, when the
// watermark closes the window, and rows of closed windows are dropped. The
// reference keeps the rows that arrived while their window was open and
// recomputes each window's top when it closes. It snapshots and restores at
// random cut points too. On both state backends: the disk one with a cache
// of 1 KiB, which most batches outgrow.
func TestWindowTopNRandom(t *testing.T) {
	for _, backend := range []string{StateMemory, StateDisk} {
		t.Run(backend, func(t *testing.T) { windowTopNRandom(t, backend) })
	}
}

func windowTopNRandom(t *testing.T, backend string) {
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}, {Name: "v", Type: types.Int64Type},
		{Name: "we", Type: types.TimestampType}}
	replays := 0 // windows closed from the DB, on the disk backend
	defer func() {
		if backend == StateDisk && !t.Failed() && replays == 0 {
			t.Error("no window closed from the DB: the test does not test the disk")
		}
	}()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 13))
		cfg := TopNConfig{Partition: []int{3, 0}, Order: []SortKeySpec{{Col: 1, Desc: rng.IntN(2) == 0}}, Lo: 1,
			Hi: 1 + int64(rng.IntN(3)), Rank: rng.IntN(2) == 0}
		if seed%4 == 0 {
			cfg.Partition = []int{3}
		}
		if seed%3 == 1 {
			cfg.Func = "rank"
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			ctx := context.Background()
			out := slices.Clone(in)
			if cfg.Rank {
				out = append(out, types.Field{Name: "rn", Type: types.Int64Type})
			}
			tc := testkit.TaskContext(mem)
			tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), 4<<10, t.TempDir()
			open := func() exec.Operator {
				op := opTestNew(t, "window_topn", WindowTopNConfig{TopN: cfg, End: 3, StateBackend: backend}, out)
				if err := op.Open(ctx, tc); err != nil {
					t.Fatal(err)
				}
				if on := op.(*windowTopNOp).spool != nil; on != (backend == StateDisk) {
					t.Fatalf("on the disk backend: %t", on)
				}
				return op
			}
			op := open()
			closeOp := func() {
				if sp := op.(*windowTopNOp).spool; sp != nil {
					replays += sp.replays
				}
				op.Close(ctx)
			}
			defer func() { closeOp() }()
			ref := &topnRef{cfg: cfg}
			c := &testkit.Collector{T: t}
			var want []string
			mark := int64(0) // seconds; windows ending at or before it are closed
			closeUpTo := func(m int64) {
				for end := mark + 1; end <= m; end++ {
					if end%10 == 0 {
						want = append(want, ref.windowTop(end)...)
					}
				}
				mark = max(mark, m)
			}
			for step := range 5 + rng.IntN(25) {
				if rng.IntN(3) == 0 {
					m := mark + int64(rng.IntN(12))
					// Watermark m s closes the windows ending at or before it
					// (their last microsecond is before m).
					if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: m * 1e6}, c); err != nil {
						t.Fatal(err)
					}
					closeUpTo(m)
				} else {
					var rows []string
					for range 1 + rng.IntN(10) {
						r := topnRefRow{k: string(rune('a' + rng.IntN(3))), x: int64(rng.IntN(6)), v: int64(rng.IntN(3)), end: 10 * int64(1+rng.IntN(5))}
						if r.end > mark { // not late
							ref.add(r)
						}
						rows = append(rows, r.json(0))
					}
					b := testkit.Batches(t, mem, in, "["+strings.Join(rows, ",")+"]")[0]
					err := op.ProcessBatch(ctx, 0, b, c)
					b.Rec.Release()
					if err != nil {
						t.Fatal(err)
					}
				}
				testkit.Equal(t, fmt.Sprintf("after step %d", step), c.Sorted(), topnRows(t, out, want))
				if rng.IntN(4) == 0 {
					snap, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(step)+1)
					if err != nil {
						t.Fatal(err)
					}
					closeOp()
					op = open()
					if err := op.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
				t.Fatal(err)
			}
			closeUpTo(math.MaxInt16)
			testkit.Equal(t, "at the end", c.Sorted(), topnRows(t, out, want))
		})
	}
}

// windowTop returns the top of the window ending at end s.
func (f *topnRef) windowTop(end int64) []string {
	return f.top(func(r topnRefRow) bool { return r.end == end })
}

// A retraction reaching a topn planned for an append-only input is an
// error, not a silently wrong top.
func TestTopNRetractionUnplanned(t *testing.T) {
	for _, backend := range topnBackends {
		mem := testkit.Mem()
		in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}}
		b := testkit.Batches(t, mem, in, `[{"k": "a", "x": 1}, {"k": "a", "x": 2}, {"k": "b", "x": 3}]`)
		b[0].Ops = []exec.ChangeKind{exec.Insert, exec.Insert, exec.Delete}
		op := topnOpen(t, mem, TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1}}, Lo: 1, Hi: 1}, in, backend, stateTestFiles(t))
		err := op.ProcessBatch(context.Background(), 0, b[0], &aggTestView{t: t})
		op.Close(context.Background())
		testkit.Release(b)
		mem.AssertSize(t, 0)
		if err == nil || !strings.Contains(err.Error(), "retraction") {
			t.Errorf("%s: a retraction into an append-only topn: %v", backend, err)
		}
	}
}

// TestTopNLargePartition: one partition of 6,000 rows over an input that
// retracts (so topn keeps them all, in many chunks), then most of them
// deleted, top rows among them; after each batch the emitted changes must
// hold the reference's top.
func TestTopNLargePartition(t *testing.T) {
	for _, backend := range topnBackends {
		t.Run(backend, func(t *testing.T) { testTopNLargePartition(t, backend) })
	}
}

func testTopNLargePartition(t *testing.T, backend string) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}, {Name: "v", Type: types.Int64Type}}
	out := append(slices.Clone(in), types.Field{Name: "rn", Type: types.Int64Type})
	cfg := TopNConfig{Order: []SortKeySpec{{Col: 1, Desc: true}}, Lo: 1, Hi: 5, Rank: true, Retracts: true}
	op := topnOpen(t, mem, cfg, out, backend, stateTestFiles(t))
	defer op.Close(ctx)
	rng := rand.New(rand.NewPCG(8, 9))
	ref := &topnRef{cfg: cfg}
	view := &aggTestView{t: t}
	chunks := 0
	for batch := range 24 {
		var rows []string
		var ops []exec.ChangeKind
		sorted := slices.SortedFunc(slices.Values(ref.rows), ref.less)
		for range 500 {
			if batch >= 12 && len(sorted) > 0 {
				i := rng.IntN(len(sorted))
				if rng.IntN(4) == 0 {
					i = rng.IntN(min(len(sorted), 8)) // a top row
				}
				r := sorted[i]
				sorted = slices.Delete(sorted, i, i+1)
				ref.remove(r)
				rows, ops = append(rows, r.json(0)), append(ops, exec.Delete)
				continue
			}
			r := topnRefRow{k: "a", x: int64(rng.IntN(3000)), v: int64(rng.IntN(2))}
			ref.add(r)
			rows, ops = append(rows, r.json(0)), append(ops, exec.Insert)
		}
		b := testkit.Batches(t, mem, in, "["+strings.Join(rows, ",")+"]")[0]
		b.Ops = ops
		err := op.ProcessBatch(ctx, 0, b, view)
		b.Rec.Release()
		if len(op.ps) > 0 { // the cache of nothing is emptied after each batch
			chunks = max(chunks, len(op.ps[0].entries.chunks))
		}
		if err == nil {
			err = op.Flush(ctx, view)
		}
		if err != nil {
			t.Fatal(err)
		}
		testkit.Equal(t, fmt.Sprintf("after batch %d", batch), view.rows(), topnRows(t, out, ref.top(nil)))
	}
	if chunks < 10 && backend != "disk-nocache" {
		t.Errorf("the partition's rows took at most %d chunks", chunks)
	}
}

// TestTopNCloseFrees: Close leaves the operator holding none of its state
// nor the scratch beside it: a finished job's operators stay reachable while
// the job is listed.
func TestTopNCloseFrees(t *testing.T) {
	for _, backend := range topnBackends[:2] {
		t.Run(backend, func(t *testing.T) { testTopNCloseFrees(t, backend) })
	}
}

func testTopNCloseFrees(t *testing.T, backend string) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "x", Type: types.Int64Type}}
	out := append(slices.Clone(in), types.Field{Name: "rn", Type: types.Int64Type})
	var op exec.Operator = topnOpen(t, mem, TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1, Desc: true}}, Lo: 1, Hi: 2, Rank: true, Retracts: true}, out, backend, stateTestFiles(t))
	var rows []string
	for i := range 100 {
		rows = append(rows, fmt.Sprintf(`{"k": "k%d", "x": %d}`, i%7, i))
	}
	b := testkit.Batches(t, mem, in, "["+strings.Join(rows, ",")+"]")[0]
	view := &aggTestView{t: t}
	err := op.ProcessBatch(ctx, 0, b, view)
	b.Rec.Release()
	if err == nil {
		err = op.(exec.Flusher).Flush(ctx, view)
	}
	if err != nil {
		t.Fatal(err)
	}
	o := op.(*topnOp)
	if o.refs == nil || o.ps == nil || o.rids == nil {
		t.Fatal("the operator holds no rows before Close: the test feeds nothing")
	}
	if err := op.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if o.parts != nil || o.rows != nil || o.refs != nil || o.ps != nil || o.dirty != nil || o.live != 0 ||
		o.pids != nil || o.rids != nil || o.sel != nil || o.diff != nil || o.skeys.data != nil || o.disk != nil {
		t.Error("topn still holds state after Close")
	}
}

// TestTopNDiskFirstBackends: first-row deduplication takes the disk backend
// under the job's SET state_backend = 'disk' and under only the
// TaskManager's disk default, and memory's under neither.
func TestTopNDiskFirstBackends(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "ts", Type: types.TimestampType}}
	for _, c := range []struct{ job, taskManager, want string }{
		{StateDisk, "", StateDisk}, {"", StateDisk, StateDisk}, {StateMemory, StateDisk, StateMemory}, {"", "", StateMemory},
	} {
		cfg := TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 1}}, Lo: 1, Hi: 1, First: true, StateBackend: c.job}
		op := opTestNew(t, "topn", cfg, in)
		tc := testkit.TaskContext(mem)
		tc.SpillDir, tc.StateBackend = t.TempDir(), c.taskManager
		if err := op.Open(ctx, tc); err != nil {
			t.Fatalf("job %q, TaskManager %q: %v", c.job, c.taskManager, err)
		}
		if onDisk := op.(*topnOp).disk != nil; onDisk != (c.want == StateDisk) {
			t.Errorf("job %q, TaskManager %q: on disk %v, want %s", c.job, c.taskManager, onDisk, c.want)
		}
		op.Close(ctx)
	}
}

package operators

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// wjdSide is the schema of each side of TestWindowJoinDiskLarge: the join
// key, the window's end and a payload.
var wjdSide = types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "e", Type: types.TimestampType}, {Name: "v", Type: types.StringType}}

// TestWindowJoinDiskLarge: an inner and a left window join on the disk
// backend whose open windows hold more than four times its --state-memory
// (128 KiB): five tumbling windows of 6000 rows a side over 2000 keys, the
// right side without the keys from 1600 up, each window fed while the one
// before is still open and closed by a watermark halfway through the next;
// checkpointed twice (the second incremental on the first) with the
// operator restored from each into a fresh one. The rows out must be
// exactly the pairs a nested loop over each window's rows finds (and, for
// the left join, each left row without a match beside NULLs); the cache
// must have been written to the DB, windows closed from it, and the DB
// must end empty.
func TestWindowJoinDiskLarge(t *testing.T) {
	if raceDetector {
		t.Skip("millions of rows through pebble are minutes under the race detector; the operator's random tests run the same code under it")
	}
	for _, kind := range []string{"inner", "left"} {
		t.Run(kind, func(t *testing.T) { windowJoinDiskLargeRun(t, kind) })
	}
}

func windowJoinDiskLargeRun(t *testing.T, kind string) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const windows, perSide, keys, rightKeys = 5, 6000, 2000, 1600
	const stateMemory = 128 << 10
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	end := func(w int) time.Time { return base.Add(time.Duration(w+1) * 10 * time.Second) }
	endText := func(w int) string { return end(w).Format("2006-01-02T15:04:05") }
	payload := func(s, w, i int) string {
		return fmt.Sprintf("side %d window %d row %06d, padded to make it longer", s, w, i)
	}

	// The reference: a nested loop over each window's rows.
	want := map[string]int{}
	for w := range windows {
		for l := range perSide {
			k := l % keys
			matched := false
			for r := range perSide {
				if r%keys == k && k < rightKeys {
					matched = true
					want[fmt.Sprintf(`[%d,"%s","%s",%d,"%s","%s"]`, k, endText(w), payload(0, w, l), k, endText(w), payload(1, w, r))]++
				}
			}
			if !matched && kind == "left" {
				want[fmt.Sprintf(`[%d,"%s","%s",null,null,null]`, k, endText(w), payload(0, w, l))]++
			}
		}
	}

	cfg := WindowJoinConfig{LeftEnd: 1, RightEnd: 1, StateBackend: StateDisk,
		Join: JoinConfig{Kind: kind, LeftKeys: []int{0, 1}, RightKeys: []int{0, 1}, Left: wjdSide, Right: wjdSide}}
	out := append(append(types.Schema{}, wjdSide...), wjdSide...)
	tc := testkit.TaskContext(mem)
	tc.Metrics = &exec.TaskMetrics{}
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), stateMemory, t.TempDir()
	open := func() *windowJoinOp {
		op := opTestNew(t, "window_join", cfg, out).(*windowJoinOp)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()
	c := &testkit.Collector{T: t}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	feed := func(w, lo, hi int) {
		t.Helper()
		for s := range 2 {
			var rows []string
			for i := lo; i < hi; i++ {
				if s == 1 && i%keys >= rightKeys {
					continue
				}
				rows = append(rows, fmt.Sprintf(`{"k": %d, "e": "%s", "v": "%s"}`, i%keys, end(w).Format("2006-01-02 15:04:05"), payload(s, w, i)))
			}
			rec := testkit.Record(t, mem, wjdSide, "["+strings.Join(rows, ",")+"]")
			err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec}, c)
			rec.Release()
			must(err)
		}
	}
	var evictions, replays int
	var held int64
	checkpoint := int64(0)
	restore := func() {
		t.Helper()
		checkpoint++
		data, err := op.SnapshotState(ctx, checkpoint)
		must(err)
		var n int64
		must(op.spool.db.Scan(nil, nil, func(k, v []byte) error { n += int64(len(k) + len(v)); return nil }))
		held = max(held, n)
		evictions += op.spool.evictions
		replays += op.spool.replays
		op.Close(ctx)
		op = open()
		must(op.RestoreState(ctx, data))
	}
	const chunk = 500
	for w := range windows {
		for lo := 0; lo < perSide; lo += chunk {
			feed(w, lo, lo+chunk)
			if lo == perSide/2 && w > 0 {
				if w == 2 || w == 3 {
					restore()
				}
				// Close the window before.
				must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: end(w-1).UnixMicro() - 1}, c))
			}
		}
	}
	must(op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c))
	must(op.ProcessSignal(ctx, 1, exec.Signal{Kind: exec.EndOfStream}, c))
	evictions += op.spool.evictions
	replays += op.spool.replays

	got := map[string]int{}
	for _, r := range c.Rows {
		got[r]++
	}
	if len(got) != len(want) {
		t.Fatalf("%d distinct rows out, want %d", len(got), len(want))
	}
	for r, n := range want {
		if got[r] != n {
			t.Fatalf("row %s %d times, want %d", r, got[r], n)
		}
	}
	if evictions == 0 || replays < windows-1 {
		t.Fatalf("%d evictions, %d windows closed from the DB: the test does not test the disk", evictions, replays)
	}
	if held < 4*stateMemory {
		t.Fatalf("the DB held at most %d bytes, not four times the %d of --state-memory", held, stateMemory)
	}
	left := 0
	must(op.spool.db.Scan(nil, nil, func(_, _ []byte) error { left++; return nil }))
	if left != 0 {
		t.Fatalf("%d keys left in the DB after every window closed", left)
	}
}

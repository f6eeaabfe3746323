package operators

import (
	"fmt"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state/disk"
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
	r := newDiskRun(t, mem, stateMemory, "window_join", cfg, out, func(op *windowJoinOp) *disk.DB { return op.spool.db })
	defer r.Close()
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
			r.Feed(s, wjdSide, rows)
		}
	}
	var evictions, replays int
	counted := func(op *windowJoinOp) { evictions, replays = evictions+op.spool.evictions, replays+op.spool.replays }
	const chunk = 500
	for w := range windows {
		for lo := 0; lo < perSide; lo += chunk {
			feed(w, lo, lo+chunk)
			if lo == perSide/2 && w > 0 {
				if w == 2 || w == 3 {
					r.Restart(counted)
				}
				// Close the window before.
				r.Signal(0, exec.Signal{Kind: exec.Watermark, Watermark: end(w-1).UnixMicro() - 1})
			}
		}
	}
	r.End(2)
	counted(r.Op)
	r.CheckRows(want)
	if evictions == 0 || replays < windows-1 {
		t.Fatalf("%d evictions, %d windows closed from the DB: the test does not test the disk", evictions, replays)
	}
	r.CheckHeld()
	if left := r.DBKeys(); left != 0 {
		t.Fatalf("%d keys left in the DB after every window closed", left)
	}
}

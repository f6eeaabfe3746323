package operators

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// ijdSide is each side of TestIntervalJoinDiskLarge: a key, a time, a text.
var ijdSide = types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "ts", Type: types.TimestampType}, {Name: "v", Type: types.StringType}}

// TestIntervalJoinDiskLarge: an inner and a left interval join (l.ts between
// r.ts - 10s and r.ts) on the disk backend whose held rows take more than
// four times its --state-memory (128 KiB): 60000 rows a side, one a
// millisecond, over 3000 keys, the right side without the keys from 2500
// up; watermarks a second behind each side's latest row every 2000 rows,
// checkpointed twice (the second incremental on the first) with the
// operator restored from each into a fresh one. The rows out must be
// exactly the pairs a loop over each key's rows finds (and, for the left
// join, each left row without one beside NULLs); the cache must have been
// written out and the DB must end empty.
func TestIntervalJoinDiskLarge(t *testing.T) {
	if raceDetector {
		t.Skip("millions of rows through pebble are minutes under the race detector; the operator's random tests run the same code under it")
	}
	for _, kind := range []string{"inner", "left"} {
		t.Run(kind, func(t *testing.T) { intervalJoinDiskLargeRun(t, kind) })
	}
}

func intervalJoinDiskLargeRun(t *testing.T, kind string) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const rows, keys, rightKeys, chunk = 60000, 3000, 2500, 500
	const stateMemory = 128 << 10
	const ms = int64(1000)
	base := int64(1704067200) * ijSec // 2024-01-01
	tsOf := func(i int) int64 { return base + int64(i)*ms }
	// Each row's time as testkit.Rows prints it.
	texts := make([]string, rows)
	{
		b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
		for i := range rows {
			b.Append(arrow.Timestamp(tsOf(i)))
		}
		a := b.NewArray()
		for i := range rows {
			texts[i] = testkit.Value(a, i).(string)
		}
		a.Release()
		b.Release()
	}
	payload := func(s, i int) string { return fmt.Sprintf("side %d row %06d, padded to make the row longer", s, i) }
	has := func(s, i int) bool { return s == 0 || i%keys < rightKeys }

	// The reference: per key, each left row against the right rows.
	want := map[string]int{}
	for l := range rows {
		k, lt := l%keys, tsOf(l)
		matched := false
		for r := k; r < rows; r += keys {
			if rt := tsOf(r); has(1, r) && lt >= rt-10*ijSec && lt <= rt {
				matched = true
				want[fmt.Sprintf(`[%d,"%s","%s",%d,"%s","%s"]`, k, texts[l], payload(0, l), k, texts[r], payload(1, r))]++
			}
		}
		if !matched && kind == "left" {
			want[fmt.Sprintf(`[%d,"%s","%s",null,null,null]`, k, texts[l], payload(0, l))]++
		}
	}

	cfg := ijConfig(kind, -10, 0)
	cfg.Left, cfg.Right, cfg.StateBackend = ijdSide, ijdSide, StateDisk
	out := append(slices.Clone(ijdSide), ijdSide...)
	tc := testkit.TaskContext(mem)
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), stateMemory, t.TempDir()
	open := func() *streamJoinOp {
		op := opTestNew(t, "interval_join", cfg, out).(*streamJoinOp)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	c := &testkit.Collector{T: t}
	var evictions int
	var held int64
	for lo := 0; lo < rows; lo += chunk {
		for s := range 2 {
			var objs []string
			for i := lo; i < lo+chunk; i++ {
				if has(s, i) {
					objs = append(objs, fmt.Sprintf(`{"k": %d, "ts": %q, "v": %q}`, i%keys, texts[i], payload(s, i)))
				}
			}
			rec := testkit.Record(t, mem, ijdSide, "["+strings.Join(objs, ",")+"]")
			err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec}, c)
			rec.Release()
			must(err)
		}
		if (lo+chunk)%2000 == 0 {
			for s := range 2 {
				must(op.ProcessSignal(ctx, s, exec.Signal{Kind: exec.Watermark, Watermark: tsOf(lo+chunk-1) - ijSec}, c))
			}
		}
		if lo+chunk == rows/3 || lo+chunk == 2*rows/3 {
			data, err := op.SnapshotState(ctx, int64(lo+chunk))
			must(err)
			var n int64
			must(op.disk.db.Scan(nil, nil, func(k, v []byte) error { n += int64(len(k) + len(v)); return nil }))
			held = max(held, n)
			evictions += op.disk.evictions
			op.Close(ctx)
			op = open()
			must(op.RestoreState(ctx, data))
		}
	}
	for s := range 2 {
		must(op.ProcessSignal(ctx, s, exec.Signal{Kind: exec.EndOfStream}, c))
	}
	evictions += op.disk.evictions

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
	if evictions == 0 {
		t.Fatal("the cache was never written out: the test does not test the disk")
	}
	if held < 4*stateMemory {
		t.Fatalf("the DB held at most %d bytes, not four times the %d of --state-memory", held, stateMemory)
	}
	must(op.writeBack())
	n := 0
	must(op.disk.db.Scan(nil, nil, func(_, _ []byte) error { n++; return nil }))
	if n != 0 {
		t.Fatalf("%d keys in the DB after both ends", n)
	}
}

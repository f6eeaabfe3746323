package operators

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state/disk"
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
	r := newDiskRun(t, mem, stateMemory, "interval_join", cfg, out, func(op *streamJoinOp) *disk.DB { return op.disk.db })
	defer r.Close()
	var evictions int
	for lo := 0; lo < rows; lo += chunk {
		for s := range 2 {
			var objs []string
			for i := lo; i < lo+chunk; i++ {
				if has(s, i) {
					objs = append(objs, fmt.Sprintf(`{"k": %d, "ts": %q, "v": %q}`, i%keys, texts[i], payload(s, i)))
				}
			}
			r.Feed(s, ijdSide, objs)
		}
		if (lo+chunk)%2000 == 0 {
			r.Watermark(2, tsOf(lo+chunk-1)-ijSec)
		}
		if lo+chunk == rows/3 || lo+chunk == 2*rows/3 {
			r.Restart(func(op *streamJoinOp) { evictions += op.disk.evictions })
		}
	}
	r.End(2)
	evictions += r.Op.disk.evictions

	r.CheckRows(want)
	if evictions == 0 {
		t.Fatal("the cache was never written out: the test does not test the disk")
	}
	r.CheckHeld()
	r.Must(r.Op.writeBack())
	if n := r.DBKeys(); n != 0 {
		t.Fatalf("%d keys in the DB after both ends", n)
	}
}

// TestIntervalJoinDiskNoLookups: an interval join on disk whose rows fit its
// cache (64 MiB of state memory), written back to pebble by a checkpoint
// halfway, looks up no key there: the cache holds every key the DB does
// (the DB has nothing the cache lacks until the cache is first emptied).
// Its rows are the memory backend's (which TestIntervalJoinRandom holds
// against a nested loop): 2^15 rows a side, one every 10 µs, each of its own
// key (every batch brings keys new to the DB and the cache), watermarks each
// side's latest every 4 batches.
func TestIntervalJoinDiskNoLookups(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	const rows = 1 << 15
	at := func(i int64) int64 { return 1_700_000_000_000_000 + i*10 }
	var batches []arrow.RecordBatch
	for lo := int64(0); lo < rows; lo += benchBatch {
		batches = append(batches, benchJoinBatch(mem, lo, rows, at))
	}
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	out := append(slices.Clone(benchJoinSide), benchJoinSide...)
	var got [2][]string
	for i, backend := range []string{StateMemory, StateDisk} {
		cfg := ijConfig("inner", -1, 0)
		cfg.Left, cfg.Right, cfg.StateBackend = benchJoinSide, benchJoinSide, backend
		r := newDiskRun[*streamJoinOp](t, mem, 64<<20, "interval_join", cfg, out, nil)
		for j, b := range batches {
			for s := range 2 {
				r.Must(r.Op.ProcessBatch(context.Background(), s, exec.Batch{Rec: b}, r.C))
			}
			if j%4 == 3 {
				r.Watermark(2, at(int64(j+1)*benchBatch-1))
			}
			if j == len(batches)/2 {
				_, err := r.Op.SnapshotState(context.Background(), 1)
				r.Must(err)
			}
		}
		r.End(2)
		if d := r.Op.disk; d != nil {
			if !d.written || d.evictions != 0 || d.lookups != 0 {
				t.Errorf("written back %v, %d evictions, %d keys looked up; want written, none and none", d.written, d.evictions, d.lookups)
			}
		}
		got[i] = r.C.Sorted()
		r.Close()
	}
	if len(got[0]) < rows {
		t.Fatalf("%d rows out, want at least %d", len(got[0]), rows)
	}
	testkit.Equal(t, "disk against memory", got[1], got[0])
}

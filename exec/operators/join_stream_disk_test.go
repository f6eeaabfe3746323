package operators

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestStreamJoinDiskLarge: an inner stream join on the disk backend whose
// held rows take more than four times its --state-memory: 40000 rows a
// side over 10000 keys (4 rows of each side per key), then every other left
// row deleted. The output, applied, must be exactly the 16 pairs per key,
// then 8, counted here by hand; the DB must hold more than four times the
// memory.
func TestStreamJoinDiskLarge(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const keys, perKey = 10000, 4
	const stateMemory = 256 << 10
	cfg := sjConfig("inner", false)
	cfg.StateBackend = StateDisk
	out := append(append(types.Schema{}, sjLeft...), sjRight...)
	op := opTestNew(t, "stream_join", cfg, out).(*streamJoinOp)
	tc := testkit.TaskContext(mem)
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), stateMemory, t.TempDir()
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	got := map[string]int{}
	c := &testkit.Collector{T: t}
	feed := func(s int, lo, hi, step int, del bool) {
		t.Helper()
		var objs []string
		var ops []exec.ChangeKind
		for i := lo; i < hi; i += step {
			name := "lk"
			if s == 1 {
				name = "rk"
			}
			objs = append(objs, fmt.Sprintf(`{"%s": %d, "%sv": "row %d"}`, name, i%keys, name[:1], i))
			if del {
				ops = append(ops, exec.Delete)
			} else {
				ops = append(ops, exec.Insert)
			}
		}
		schema := sjLeft
		if s == 1 {
			schema = sjRight
		}
		rec := testkit.Record(t, mem, schema, "["+strings.Join(objs, ",")+"]")
		c.Rows = c.Rows[:0]
		err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec, Ops: ops}, c)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		sjFold(t, got, c.Rows)
	}
	const rows = keys * perKey
	for lo := 0; lo < rows; lo += 500 {
		feed(0, lo, lo+500, 1, false)
		feed(1, lo, lo+500, 1, false)
	}
	want := func(leftStep int) map[string]int {
		w := map[string]int{}
		for l := 0; l < rows; l += leftStep {
			for r := l % keys; r < rows; r += keys {
				w[fmt.Sprintf(`[%d,"row %d",%d,"row %d"]`, l%keys, l, l%keys, r)]++
			}
		}
		return w
	}
	check := func(what string, w map[string]int) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("%s: %d joined rows, want %d", what, len(got), len(w))
		}
		for r, n := range w {
			if got[r] != n {
				t.Fatalf("%s: row %s %d times, want %d", what, r, got[r], n)
			}
		}
	}
	check("after the inserts", want(1))
	for lo := 0; lo < rows; lo += 1000 {
		feed(0, lo+1, lo+1000, 2, true)
	}
	check("after the deletes", want(2))
	if op.disk.evictions == 0 {
		t.Fatal("the cache was never emptied")
	}
	if err := op.writeBack(); err != nil {
		t.Fatal(err)
	}
	var held int64
	if err := op.disk.db.Scan(nil, nil, func(k, v []byte) error {
		held += int64(len(k) + len(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if held < 4*stateMemory {
		t.Fatalf("the join holds %d bytes, not four times its %d", held, stateMemory)
	}
}

package operators

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestViewDisk: a view on the disk backend with 64 KiB of state memory takes
// rows that come and go (inserts, deletes and updates of rows it holds, some
// rows many times, NULLs in the text column), read at every step and
// checkpointed three times (each checkpoint after the first incremental) with
// the operator restored from each into a fresh one; once from its final
// state (the whole rows, as a task stores them at its end). Every read must
// be the multiset a Go map of the changes holds; the cache must have been
// written back and emptied, and the DB must have held more than four times
// the state memory.
func TestViewDisk(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	const stateMemory = 64 << 10
	schema := types.Schema{{Name: "k", Type: types.Int64Type}, {Name: "s", Type: types.StringType}}
	tc := testkit.TaskContext(mem)
	tc.Parallelism = 1
	tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), stateMemory, t.TempDir()
	open := func() *viewOp {
		op := opTestNew(t, "view", ViewConfig{StateBackend: StateDisk}, schema).(*viewOp)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		if op.state.disk == nil {
			t.Fatal("the view is not on the disk backend")
		}
		return op
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	op := open()
	defer func() { op.state.closeDisk() }()

	rng := rand.New(rand.NewPCG(21, 7))
	held := map[string]int{} // the reference: each row's text and how many times the view holds it
	var keys []string        // rows held, for retractions to pick from
	text := func(k int, s string) string {
		if s == "" {
			return fmt.Sprintf("[%d,null]", k)
		}
		return fmt.Sprintf("[%d,%q]", k, s)
	}
	obj := func(k int, s string) string {
		if s == "" {
			return fmt.Sprintf(`{"k": %d, "s": null}`, k)
		}
		return fmt.Sprintf(`{"k": %d, "s": %q}`, k, s)
	}
	parse := map[string][2]any{}
	var evictions int
	var most int64
	for step := range 60 {
		var rows []string
		var ops []exec.ChangeKind
		for range 500 {
			if len(keys) > 0 && rng.IntN(3) == 0 {
				// Retract a held row: a delete, or an update to a new row.
				i := rng.IntN(len(keys))
				r := keys[i]
				p := parse[r]
				held[r]--
				if held[r] == 0 {
					delete(held, r)
					keys[i] = keys[len(keys)-1]
					keys = keys[:len(keys)-1]
				}
				rows = append(rows, obj(p[0].(int), p[1].(string)))
				if rng.IntN(2) == 0 {
					ops = append(ops, exec.Delete)
					continue
				}
				ops = append(ops, exec.UpdateBefore)
				k := rng.IntN(50000)
				r = text(k, "u")
				parse[r] = [2]any{k, "u"}
				if held[r] == 0 {
					keys = append(keys, r)
				}
				held[r]++
				rows = append(rows, obj(k, "u"))
				ops = append(ops, exec.UpdateAfter)
				continue
			}
			k, s := rng.IntN(50000), []string{"", "a longer text that fills the keys", "x"}[rng.IntN(3)]
			if rng.IntN(10) == 0 {
				k = rng.IntN(5) // a few rows held many times
			}
			r := text(k, s)
			parse[r] = [2]any{k, s}
			if held[r] == 0 {
				keys = append(keys, r)
			}
			held[r]++
			rows = append(rows, obj(k, s))
			ops = append(ops, exec.Insert)
		}
		b := testkit.Batches(t, mem, schema, "["+strings.Join(rows, ",")+"]")[0]
		b.Ops = ops
		err := op.ProcessBatch(ctx, 0, b, nil)
		b.Rec.Release()
		must(err)

		var want []string
		total := int64(0)
		for r, n := range held {
			for range n {
				want = append(want, r)
			}
			total += int64(n)
		}
		slices.Sort(want)
		data, err := op.ReadView(true)
		must(err)
		testkit.Equal(t, fmt.Sprintf("the view's rows at step %d", step), viewTestRows(t, data), want)
		if op.state.Rows() != total {
			t.Fatalf("step %d: Rows() = %d, want %d", step, op.state.Rows(), total)
		}
		var n int64
		must(op.state.disk.db.Scan(nil, nil, func(k, v []byte) error { n += int64(len(k) + len(v)); return nil }))
		most = max(most, n)

		switch step {
		case 15, 30, 45:
			p, err := op.SnapshotStateAsync(ctx, int64(step))
			must(err)
			blob, _, err := p(ctx)
			must(err)
			evictions += op.state.disk.evictions
			op.state.closeDisk()
			op = open()
			must(op.RestoreState(ctx, blob))
		case 50:
			blob, err := op.SnapshotState(ctx, 0) // the final state: the rows whole
			must(err)
			if isDiskState(blob, viewDiskMagic) {
				t.Fatal("the final state is the DB's checkpoint, not the rows")
			}
			evictions += op.state.disk.evictions
			op.state.closeDisk()
			op = open()
			must(op.RestoreState(ctx, blob))
		}
	}
	if evictions += op.state.disk.evictions; evictions == 0 {
		t.Fatal("the cache was never emptied: the test does not test the disk")
	}
	if most < 4*stateMemory {
		t.Fatalf("the DB held at most %d bytes, not four times the %d of state memory", most, stateMemory)
	}
	// A retraction of a row the view does not hold is an error, on disk too.
	b := testkit.Batches(t, mem, schema, `[{"k": -1, "s": "never"}]`)[0]
	b.Ops = []exec.ChangeKind{exec.Delete}
	err := op.ProcessBatch(ctx, 0, b, nil)
	b.Rec.Release()
	if err == nil {
		t.Fatal("retracting a row the view does not hold: no error")
	}
}

package operators

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestUnion: rows of both inputs pass with their change kinds, under the
// output's names; a batch of another type is refused; EndOfStream goes on
// once, after both inputs ended.
func TestUnion(t *testing.T) {
	ctx := context.Background()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	out := types.Schema{{Name: "a", Type: types.Int64Type}}
	op := opTestNew(t, "union", struct{}{}, out)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	left := testkit.Batches(t, mem, out, `[{"a": 1}, {"a": 2}]`)
	defer testkit.Release(left)
	right := testkit.Batches(t, mem, types.Schema{{Name: "b", Type: types.Int64Type}}, `[{"b": 3}]`)
	defer testkit.Release(right)
	right[0].Ops = []exec.ChangeKind{exec.Delete}
	text := testkit.Batches(t, mem, types.Schema{{Name: "s", Type: types.StringType}}, `[{"s": "x"}]`)
	defer testkit.Release(text)
	c := &testkit.Collector{T: t}
	for _, step := range []struct {
		input int
		b     exec.Batch
	}{{0, left[0]}, {1, right[0]}} {
		if err := op.ProcessBatch(ctx, step.input, step.b, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.ProcessBatch(ctx, 1, text[0], c); err == nil {
		t.Error("a text batch into a bigint union: no error")
	}
	eos := exec.Signal{Kind: exec.EndOfStream}
	if err := op.ProcessSignal(ctx, 1, eos, c); err != nil || len(c.Signals) != 0 {
		t.Fatalf("after one input ended: %v, signals %v", err, c.Signals)
	}
	if err := op.ProcessSignal(ctx, 0, eos, c); err != nil || len(c.Signals) != 1 {
		t.Fatalf("after both ended: %v, signals %v", err, c.Signals)
	}
	testkit.Equal(t, "rows", c.Rows, []string{"[1]", "[2]", "delete [3]"})
}

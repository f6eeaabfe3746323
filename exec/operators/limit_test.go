package operators

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

func TestLimit(t *testing.T) {
	s := types.Schema{{Name: "n", Type: types.Int64Type}}
	in := []string{`[{"n": 1}, {"n": 2}, {"n": 3}]`, `[{"n": 4}, {"n": 5}]`, `[{"n": 6}, {"n": 7}, {"n": 8}, {"n": 9}]`}
	tests := []struct {
		name string
		cfg  LimitConfig
		want []string
	}{
		{"offset 2 count 3", LimitConfig{Offset: 2, Count: 3}, []string{"[3]", "[4]", "[5]"}},
		{"count 4 spans batches", LimitConfig{Count: 4}, []string{"[1]", "[2]", "[3]", "[4]"}},
		{"offset 4, no count", LimitConfig{Offset: 4, Count: -1}, []string{"[5]", "[6]", "[7]", "[8]", "[9]"}},
		{"offset 6 count 2", LimitConfig{Offset: 6, Count: 2}, []string{"[7]", "[8]"}},
		{"count 0", LimitConfig{Count: 0}, nil},
		{"offset past the end", LimitConfig{Offset: 20, Count: -1}, nil},
		{"count more than rows", LimitConfig{Count: 100}, []string{"[1]", "[2]", "[3]", "[4]", "[5]", "[6]", "[7]", "[8]", "[9]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			bs := testkit.Batches(t, mem, s, in...)
			defer testkit.Release(bs)
			bs[1].Ops = []exec.ChangeKind{exec.Delete, exec.UpdateAfter}
			op := opTestNew(t, "limit", tc.cfg, s)
			c, err := testkit.Run(t, op, mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string(nil), tc.want...)
			for i, w := range want {
				if w == "[4]" {
					want[i] = "delete [4]"
				}
				if w == "[5]" {
					want[i] = "update_after [5]"
				}
			}
			testkit.Equal(t, "rows", c.Rows, want)
			if len(c.Signals) != 1 || c.Signals[0].Kind != exec.EndOfStream {
				t.Errorf("signals %v", c.Signals)
			}
		})
	}
}

func TestLimitForwardsSignalsAfterLimit(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	s := types.Schema{{Name: "n", Type: types.Int64Type}}
	bs := testkit.Batches(t, mem, s, `[{"n": 1}, {"n": 2}]`, `[{"n": 3}]`)
	defer testkit.Release(bs)
	op := opTestNew(t, "limit", LimitConfig{Count: 1}, s)
	ctx := context.Background()
	c := &testkit.Collector{T: t}
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	sigs := []exec.Signal{{Kind: exec.Watermark, Watermark: 5}, {Kind: exec.Barrier, Checkpoint: 1}}
	for _, b := range bs {
		if err := op.ProcessBatch(ctx, 0, b, c); err != nil {
			t.Fatal(err)
		}
		for _, sg := range sigs {
			if err := op.ProcessSignal(ctx, 0, sg, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	testkit.Equal(t, "rows", c.Rows, []string{"[1]"})
	if len(c.Signals) != 4 {
		t.Errorf("signals %v, want all four forwarded", c.Signals)
	}
}

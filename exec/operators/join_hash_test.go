package operators

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

var (
	joinLeft = types.Schema{{Name: "lk", Type: types.Int64Type}, {Name: "ls", Type: types.StringType},
		{Name: "lv", Type: types.StringType}}
	joinRight = types.Schema{{Name: "rk", Type: types.Int64Type}, {Name: "rs", Type: types.StringType},
		{Name: "rv", Type: types.StringType}}
	joinOut = append(append(types.Schema{}, joinLeft...), joinRight...)

	joinLeftRows = []string{
		`[{"lk": 1, "ls": "a", "lv": "L1"}, {"lk": 2, "ls": "b", "lv": "L2"}, {"lk": null, "ls": "c", "lv": "L3"}]`,
		`[{"lk": 1, "ls": "d", "lv": "L4"}, {"lk": 3, "ls": "a", "lv": "L5"}, {"lk": 5, "ls": null, "lv": "L6"}]`,
	}
	joinRightRows = []string{
		`[{"rk": 1, "rs": "a", "rv": "R1"}, {"rk": 1, "rs": "x", "rv": "R2"}, {"rk": null, "rs": "c", "rv": "R3"}]`,
		`[{"rk": 2, "rs": "b", "rv": "R4"}, {"rk": 4, "rs": "z", "rv": "R5"}, {"rk": 5, "rs": null, "rv": "R6"}]`,
	}
)

// joinRows expands "L1-R2" pair names into the expected output rows.
func joinRows(pairs ...string) []string {
	left := map[string]string{
		"L1": `1,"a","L1"`, "L2": `2,"b","L2"`, "L3": `null,"c","L3"`,
		"L4": `1,"d","L4"`, "L5": `3,"a","L5"`, "L6": `5,null,"L6"`,
	}
	right := map[string]string{
		"R1": `1,"a","R1"`, "R2": `1,"x","R2"`, "R3": `null,"c","R3"`,
		"R4": `2,"b","R4"`, "R5": `4,"z","R5"`, "R6": `5,null,"R6"`, "-": `null,null,null`,
	}
	var out []string
	for _, p := range pairs {
		l, r, _ := strings.Cut(p, "-")
		if r == "" {
			r = "-"
		}
		out = append(out, "["+left[l]+","+right[r]+"]")
	}
	slices.Sort(out)
	return out
}

// joinRun drives a join: order is a string of 'L' (next left batch), 'R' (next
// right batch), 'l' (left end of stream) and 'r' (right end of stream). It
// checks that EndOfStream goes downstream once, after both inputs ended.
func joinRun(t *testing.T, mem memory.Allocator, cfg JoinConfig, order string, left, right []exec.Batch) (*testkit.Collector, error) {
	t.Helper()
	ctx := context.Background()
	op := opTestNew(t, "hash_join", cfg, joinOut)
	c := &testkit.Collector{T: t}
	defer func() {
		op.Close(ctx)
		op.Close(ctx)
	}()
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		return c, err
	}
	li, ri := 0, 0
	leftEnded, rightEnded := false, false
	for _, step := range order {
		var err error
		switch step {
		case 'L':
			err = op.ProcessBatch(ctx, 0, left[li], c)
			li++
		case 'R':
			err = op.ProcessBatch(ctx, 1, right[ri], c)
			ri++
		case 'l':
			err = op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c)
			leftEnded = true
		case 'r':
			err = op.ProcessSignal(ctx, 1, exec.Signal{Kind: exec.EndOfStream}, c)
			rightEnded = true
		}
		if err != nil {
			return c, err
		}
		want := 0
		if leftEnded && rightEnded {
			want = 1
		}
		if len(c.Signals) != want || (want == 1 && c.Signals[0].Kind != exec.EndOfStream) {
			t.Fatalf("after %q of %q: signals %v", step, order, c.Signals)
		}
	}
	return c, nil
}

func TestHashJoin(t *testing.T) {
	neq := expr.Call("<>", types.BoolType,
		expr.Column(1, types.StringType, "ls"), expr.Column(4, types.StringType, "rs"))
	tests := []struct {
		name string
		cfg  JoinConfig
		want []string
	}{
		{"inner on bigint, duplicates and NULLs", JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}},
			joinRows("L1-R1", "L1-R2", "L2-R4", "L4-R1", "L4-R2", "L6-R6")},
		{"left on bigint", JoinConfig{Kind: "left", LeftKeys: []int{0}, RightKeys: []int{0}},
			joinRows("L1-R1", "L1-R2", "L2-R4", "L3", "L4-R1", "L4-R2", "L5", "L6-R6")},
		{"inner on text", JoinConfig{Kind: "inner", LeftKeys: []int{1}, RightKeys: []int{1}},
			joinRows("L1-R1", "L2-R4", "L3-R3", "L5-R1")},
		{"left on text", JoinConfig{Kind: "left", LeftKeys: []int{1}, RightKeys: []int{1}},
			joinRows("L1-R1", "L2-R4", "L3-R3", "L4", "L5-R1", "L6")},
		{"inner on two keys", JoinConfig{Kind: "inner", LeftKeys: []int{0, 1}, RightKeys: []int{0, 1}},
			joinRows("L1-R1", "L2-R4")},
		{"left on two keys", JoinConfig{Kind: "left", LeftKeys: []int{1, 0}, RightKeys: []int{1, 0}},
			joinRows("L1-R1", "L2-R4", "L3", "L4", "L5", "L6")},
		{"inner with extra", JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}, Extra: neq},
			joinRows("L1-R2", "L4-R1", "L4-R2")},
		{"left with extra", JoinConfig{Kind: "left", LeftKeys: []int{0}, RightKeys: []int{0}, Extra: neq},
			joinRows("L1-R2", "L2", "L3", "L4-R1", "L4-R2", "L5", "L6")},
	}
	orders := []string{"RRrLLl", "LLRRlr", "LRLlRr", "RLRrLl"}
	for _, tc := range tests {
		for _, order := range orders {
			t.Run(tc.name+"/"+order, func(t *testing.T) {
				mem := testkit.Mem()
				defer mem.AssertSize(t, 0)
				left := testkit.Batches(t, mem, joinLeft, joinLeftRows...)
				defer testkit.Release(left)
				right := testkit.Batches(t, mem, joinRight, joinRightRows...)
				defer testkit.Release(right)
				c, err := joinRun(t, mem, tc.cfg, order, left, right)
				if err != nil {
					t.Fatal(err)
				}
				testkit.Equal(t, "rows", c.Sorted(), tc.want)
			})
		}
	}
}

func TestHashJoinEmptyBuildSide(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	left := testkit.Batches(t, mem, joinLeft, joinLeftRows...)
	defer testkit.Release(left)
	c, err := joinRun(t, mem, JoinConfig{Kind: "left", LeftKeys: []int{0}, RightKeys: []int{0}}, "LrLl", left, nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "left", c.Sorted(), joinRows("L1", "L2", "L3", "L4", "L5", "L6"))
	c, err = joinRun(t, mem, JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}}, "LrLl", left, nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "inner", c.Rows, nil)
}

func TestHashJoinChangeKinds(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	left := testkit.Batches(t, mem, joinLeft, joinLeftRows[0])
	defer testkit.Release(left)
	right := testkit.Batches(t, mem, joinRight, joinRightRows...)
	defer testkit.Release(right)
	left[0].Ops = []exec.ChangeKind{exec.Delete, exec.Insert, exec.UpdateBefore}
	c, err := joinRun(t, mem, JoinConfig{Kind: "left", LeftKeys: []int{0}, RightKeys: []int{0}}, "LRRrl", left, right)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "rows", c.Rows, []string{
		`delete [1,"a","L1",1,"a","R1"]`, `delete [1,"a","L1",1,"x","R2"]`, `[2,"b","L2",2,"b","R4"]`,
		`update_before [null,"c","L3",null,null,null]`,
	})
	// Retractions on the build side are refused.
	right[0].Ops = []exec.ChangeKind{exec.Insert, exec.Delete, exec.Insert}
	if _, err := joinRun(t, mem, JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}}, "R", left, right); err == nil {
		t.Errorf("delete on the build side: no error")
	}
}

func TestHashJoinWatermarks(t *testing.T) {
	ctx := context.Background()
	op := opTestNew(t, "hash_join", JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}}, joinOut)
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	c := &testkit.Collector{T: t}
	steps := []struct {
		input int
		s     exec.Signal
	}{
		{0, exec.Signal{Kind: exec.Watermark, Watermark: 10}}, // right has none yet: hold
		{1, exec.Signal{Kind: exec.Watermark, Watermark: 5}},  // min 5
		{1, exec.Signal{Kind: exec.Watermark, Watermark: 20}}, // min 10
		{0, exec.Signal{Kind: exec.Barrier, Checkpoint: 3}},   // passes
		{0, exec.Signal{Kind: exec.EndOfStream}},              // left done: right's 20 rules
		{1, exec.Signal{Kind: exec.Watermark, Watermark: 30}}, // 30
		{1, exec.Signal{Kind: exec.EndOfStream}},              // end
	}
	for _, st := range steps {
		if err := op.ProcessSignal(ctx, st.input, st.s, c); err != nil {
			t.Fatal(err)
		}
	}
	want := []exec.Signal{{Kind: exec.Watermark, Watermark: 5}, {Kind: exec.Watermark, Watermark: 10}, {Kind: exec.Barrier, Checkpoint: 3},
		{Kind: exec.Watermark, Watermark: 20}, {Kind: exec.Watermark, Watermark: 30}, {Kind: exec.EndOfStream}}
	if !slices.Equal(c.Signals, want) {
		t.Errorf("signals %v, want %v", c.Signals, want)
	}
}

package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
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
		"": `null,null,null`, // a right row nothing matched ("-R3")
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
	return joinRunOut(t, mem, cfg, joinOut, order, left, right)
}

// joinRunOut is joinRun for a join of output schema out.
func joinRunOut(t *testing.T, mem memory.Allocator, cfg JoinConfig, out types.Schema, order string, left, right []exec.Batch) (*testkit.Collector, error) {
	t.Helper()
	ctx := context.Background()
	op := opTestNew(t, "hash_join", cfg, out)
	c := &testkit.Collector{T: t}
	defer func() {
		op.Close(ctx)
		op.Close(ctx)
	}()
	tc := testkit.TaskContext(mem)
	tc.SpillDir = t.TempDir()
	if err := op.Open(ctx, tc); err != nil {
		return c, err
	}
	defer func() {
		op.Close(ctx)
		if left, _ := os.ReadDir(tc.SpillDir); len(left) != 0 {
			t.Errorf("spill directory holds %d entries after Close", len(left))
		}
	}()
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
		// A full join adds the right rows nothing matched ("-R3").
		{"full on bigint", JoinConfig{Kind: "full", LeftKeys: []int{0}, RightKeys: []int{0}},
			joinRows("L1-R1", "L1-R2", "L2-R4", "L3", "L4-R1", "L4-R2", "L5", "L6-R6", "-R3", "-R5")},
		{"full with extra", JoinConfig{Kind: "full", LeftKeys: []int{0}, RightKeys: []int{0}, Extra: neq},
			joinRows("L1-R2", "L2", "L3", "L4-R1", "L4-R2", "L5", "L6", "-R3", "-R4", "-R5", "-R6")},
		// A right join: the full join without the left rows nothing matched.
		{"right on bigint", JoinConfig{Kind: "right", LeftKeys: []int{0}, RightKeys: []int{0}},
			joinRows("L1-R1", "L1-R2", "L2-R4", "L4-R1", "L4-R2", "L6-R6", "-R3", "-R5")},
		{"right with extra", JoinConfig{Kind: "right", LeftKeys: []int{0}, RightKeys: []int{0}, Extra: neq},
			joinRows("L1-R2", "L4-R1", "L4-R2", "-R3", "-R4", "-R5", "-R6")},
	}
	// Without keys (a nested-loop join): every pair, then the condition.
	lt := expr.Call("<", types.BoolType, expr.Column(0, types.Int64Type, "lk"), expr.Column(3, types.Int64Type, "rk"))
	ltPairs := []string{"L1-R4", "L1-R5", "L1-R6", "L2-R5", "L2-R6", "L4-R4", "L4-R5", "L4-R6", "L5-R5", "L5-R6"}
	var cross []string
	for l := 1; l <= 6; l++ {
		for r := 1; r <= 6; r++ {
			cross = append(cross, fmt.Sprintf("L%d-R%d", l, r))
		}
	}
	tests = append(tests, []struct {
		name string
		cfg  JoinConfig
		want []string
	}{
		{"cross", JoinConfig{Kind: "inner"}, joinRows(cross...)},
		{"cross left", JoinConfig{Kind: "left"}, joinRows(cross...)},
		{"inner on lk < rk", JoinConfig{Kind: "inner", Extra: lt}, joinRows(ltPairs...)},
		{"left on lk < rk", JoinConfig{Kind: "left", Extra: lt}, joinRows(append(ltPairs, "L3", "L6")...)},
		{"full on lk < rk", JoinConfig{Kind: "full", Extra: lt}, joinRows(append(ltPairs, "L3", "L6", "-R1", "-R2", "-R3")...)},
		{"right on lk < rk", JoinConfig{Kind: "right", Extra: lt}, joinRows(append(ltPairs, "-R1", "-R2", "-R3")...)},
	}...)
	orders := []string{"RRrLLl", "LLRRlr", "LRLlRr", "RLRrLl"}
	for _, tc := range tests {
		for _, order := range orders {
			// A budget of 1 byte spills from the first batch held: each
			// partition of both inputs is joined on its own.
			for _, limit := range []int64{0, 1} {
				name := tc.name + "/" + order
				if limit > 0 {
					name += "/spilled"
				}
				t.Run(name, func(t *testing.T) {
					mem := testkit.Mem()
					defer mem.AssertSize(t, 0)
					left := testkit.Batches(t, mem, joinLeft, joinLeftRows...)
					defer testkit.Release(left)
					right := testkit.Batches(t, mem, joinRight, joinRightRows...)
					defer testkit.Release(right)
					cfg := tc.cfg
					cfg.MemoryLimit = limit
					c, err := joinRun(t, mem, cfg, order, left, right)
					if err != nil {
						t.Fatal(err)
					}
					testkit.Equal(t, "rows", c.Sorted(), tc.want)
				})
			}
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
	// Without keys too.
	c, err = joinRun(t, mem, JoinConfig{Kind: "left"}, "LrLl", left, nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "left without keys", c.Sorted(), joinRows("L1", "L2", "L3", "L4", "L5", "L6"))
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

// TestHashJoinSpilledRandom joins random rows, one key far hotter than the
// budget (it is split again down to maxSpillLevel, then joined in memory),
// under a small budget and checks the result against the join in memory.
func TestHashJoinSpilledRandom(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(3, 4))
	batches := func(side string, n, per int) []string {
		var out []string
		for i := 0; i < n; i += per {
			var rows []string
			for j := i; j < min(n, i+per); j++ {
				k := fmt.Sprint(r.IntN(300))
				switch r.IntN(10) {
				case 0:
					k = "null"
				case 1, 2, 3:
					k = "7"
				}
				rows = append(rows, fmt.Sprintf(`{"%sk": %s, "%ss": "s%d", "%sv": "%s%d"}`, side, k, side, r.IntN(5), side, side, j))
			}
			out = append(out, "["+strings.Join(rows, ",")+"]")
		}
		return out
	}
	left := testkit.Batches(t, mem, joinLeft, batches("l", 3000, 250)...)
	defer testkit.Release(left)
	right := testkit.Batches(t, mem, joinRight, batches("r", 600, 100)...)
	defer testkit.Release(right)
	order := strings.Repeat("R", len(right)) + "r" + strings.Repeat("L", len(left)) + "l"
	for _, kind := range []string{"inner", "left"} {
		cfg := JoinConfig{Kind: kind, LeftKeys: []int{0}, RightKeys: []int{0}, Left: joinLeft, Right: joinRight}
		c, err := joinRun(t, mem, cfg, order, left, right)
		if err != nil {
			t.Fatal(err)
		}
		want := c.Sorted()
		cfg.MemoryLimit = 8 << 10
		c, err = joinRun(t, mem, cfg, order, left, right)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 10000 {
			t.Fatalf("%s join: only %d rows", kind, len(want))
		}
		testkit.Equal(t, kind+" join rows", c.Sorted(), want)
	}
}

// TestHashJoinKeep: a join that keeps some columns of its pairs (JoinConfig.Keep)
// emits exactly the whole pairs' rows cut to those columns, for every join
// kind, with and without Extra (which reads columns the output drops), in
// memory and spilled.
func TestHashJoinKeep(t *testing.T) {
	neq := expr.Call("<>", types.BoolType, expr.Column(1, types.StringType, "ls"), expr.Column(4, types.StringType, "rs"))
	for _, keep := range [][]int{
		{5, 0, 3},          // rv, lk, rk: Extra reads ls and rs, which go
		{3, 4, 5, 0, 1, 2}, // every column, right ones first
	} {
		var kept types.Schema
		for _, c := range keep {
			kept = append(kept, joinOut[c])
		}
		for _, kind := range []string{"inner", "left", "right", "full"} {
			for _, extra := range []*expr.Expr{nil, neq} {
				for _, limit := range []int64{0, 1} {
					t.Run(fmt.Sprintf("%v/%s/extra=%v/limit=%d", keep, kind, extra != nil, limit), func(t *testing.T) {
						mem := testkit.Mem()
						defer mem.AssertSize(t, 0)
						left := testkit.Batches(t, mem, joinLeft, joinLeftRows...)
						defer testkit.Release(left)
						right := testkit.Batches(t, mem, joinRight, joinRightRows...)
						defer testkit.Release(right)
						cfg := JoinConfig{Kind: kind, LeftKeys: []int{0}, RightKeys: []int{0}, Extra: extra,
							Left: joinLeft, Right: joinRight, MemoryLimit: limit}
						whole, err := joinRunOut(t, mem, cfg, joinOut, "LRLRrl", left, right)
						if err != nil {
							t.Fatal(err)
						}
						var want []string
						for _, row := range whole.Rows {
							var vals []any
							if err := json.Unmarshal([]byte(row), &vals); err != nil {
								t.Fatal(err)
							}
							picked := make([]any, len(keep))
							for i, c := range keep {
								picked[i] = vals[c]
							}
							js, _ := json.Marshal(picked)
							want = append(want, string(js))
						}
						slices.Sort(want)
						if len(want) == 0 {
							t.Fatal("no rows: a test that cannot tell")
						}
						cfg.Keep = keep
						got, err := joinRunOut(t, mem, cfg, kept, "LRLRrl", left, right)
						if err != nil {
							t.Fatal(err)
						}
						testkit.Equal(t, "rows", got.Sorted(), want)
					})
				}
			}
		}
	}
}

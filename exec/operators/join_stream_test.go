package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

var (
	sjLeft  = types.Schema{{Name: "lk", Type: types.Int64Type}, {Name: "lv", Type: types.StringType}}
	sjRight = types.Schema{{Name: "rk", Type: types.Int64Type}, {Name: "rv", Type: types.StringType}}
	sjOut   = append(append(types.Schema{}, sjLeft...), sjRight...)
)

// sjRow is a row of either side: a key (nil for NULL) and a value. With
// text, the key is the text "k" and the number (sjTextLeft, sjTextRight).
type sjRow struct {
	k    *int64
	v    string
	text bool
}

func (r sjRow) key() any {
	switch {
	case r.k == nil:
		return nil
	case r.text:
		return fmt.Sprint("k", *r.k)
	}
	return *r.k
}

func (r sjRow) vals() []any { return []any{r.key(), r.v} }

func (r sjRow) json(kName, vName string) string {
	k, err := json.Marshal(r.key())
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`{%q: %s, %q: %q}`, kName, k, vName, r.v)
}

var (
	sjTextLeft  = types.Schema{{Name: "lk", Type: types.StringType}, {Name: "lv", Type: types.StringType}}
	sjTextRight = types.Schema{{Name: "rk", Type: types.StringType}, {Name: "rv", Type: types.StringType}}
)

// sjExpected is the join of the multisets left and right by nested loops:
// each output row (as testkit.Rows prints it) with its number of copies.
func sjExpected(kind string, extra bool, left, right map[sjRow]int) map[string]int {
	return sjExpectedKeys(kind, extra, false, left, right)
}

// sjExpectedKeys is sjExpected, on both columns as keys with bothKeys.
func sjExpectedKeys(kind string, extra, bothKeys bool, left, right map[sjRow]int) map[string]int {
	out := map[string]int{}
	row := func(l, r []any) string {
		js, err := json.Marshal(append(append([]any{}, l...), r...))
		if err != nil {
			panic(err)
		}
		return string(js)
	}
	nulls := []any{nil, nil}
	matches := func(l, r sjRow) bool {
		return l.k != nil && r.k != nil && *l.k == *r.k && (!extra || l.v != r.v) && (!bothKeys || l.v == r.v)
	}
	for l, cl := range left {
		found := false
		for r, cr := range right {
			if matches(l, r) {
				found = true
				out[row(l.vals(), r.vals())] += cl * cr
			}
		}
		if !found && (kind == "left" || kind == "full") {
			out[row(l.vals(), nulls)] += cl
		}
	}
	for r, cr := range right {
		found := false
		for l := range left {
			found = found || matches(l, r)
		}
		if !found && (kind == "right" || kind == "full") {
			out[row(nulls, r.vals())] += cr
		}
	}
	return out
}

// sjFold applies a changelog to a multiset of rows, failing on a delete of a
// row it does not hold.
func sjFold(t *testing.T, into map[string]int, rows []string) {
	t.Helper()
	for _, r := range rows {
		if s, ok := strings.CutPrefix(r, "delete "); ok {
			if into[s] == 0 {
				t.Fatalf("delete of %s, which the output does not hold", s)
			}
			if into[s]--; into[s] == 0 {
				delete(into, s)
			}
			continue
		}
		if strings.Contains(r, " ") && !strings.HasPrefix(r, "[") {
			t.Fatalf("output row of change kind other than insert and delete: %s", r)
		}
		into[r]++
	}
}

// sjSide is the schema of side s of sjConfig's joins.
func sjSide(s int) types.Schema {
	if s == 1 {
		return sjRight
	}
	return sjLeft
}

func sjConfig(kind string, extra bool) StreamJoinConfig {
	cfg := StreamJoinConfig{Kind: kind, LeftKeys: []int{0}, RightKeys: []int{0}, Left: sjLeft, Right: sjRight}
	if extra {
		cfg.Extra = expr.Call("<>", types.BoolType,
			expr.Column(1, types.StringType, "lv"), expr.Column(3, types.StringType, "rv"))
	}
	return cfg
}

// TestStreamJoinRandom joins random streams of inserts and deletes on both
// sides, with barriers between batches, and checks after each barrier that
// the output's changes, applied in order, hold exactly the nested-loop join
// of the rows then held on both sides; at some barriers it snapshots the
// operator and carries on with a new one restored from the snapshot.
// The keys are a bigint; a text (its own encoding: the string's bytes, in
// place); or both columns. On the disk backend, its cache is emptied after
// every batch, so that every batch reads the keys it joins from pebble.
func TestStreamJoinRandom(t *testing.T) {
	for _, backend := range []string{StateMemory, StateDisk} {
		for _, kind := range []string{"inner", "left", "right", "full"} {
			for _, keys := range []string{"bigint", "text", "both"} {
				for _, extra := range []bool{false, true} {
					if keys == "both" && extra {
						continue // lv <> rv would contradict lv = rv
					}
					seeds := uint64(4)
					if backend == StateDisk {
						seeds = 2 // each a few times slower, for its reads and writes
					}
					for seed := range seeds {
						t.Run(fmt.Sprintf("%s/%s/%s/extra=%v/%d", backend, kind, keys, extra, seed), func(t *testing.T) {
							sjRandomRun(t, backend, kind, keys, extra, seed)
						})
					}
				}
			}
		}
	}
}

func sjRandomRun(t *testing.T, backend, kind, keys string, extra bool, seed uint64) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(seed, 25))
	cfg := sjConfig(kind, extra)
	left, right := sjLeft, sjRight
	text := keys == "text"
	if text {
		left, right = sjTextLeft, sjTextRight
		cfg.Left, cfg.Right = left, right
	}
	if keys == "both" {
		cfg.LeftKeys, cfg.RightKeys = []int{0, 1}, []int{0, 1}
	}
	out := append(append(types.Schema{}, left...), right...)
	cfg.StateBackend = backend
	tc := testkit.TaskContext(mem)
	if backend == StateDisk {
		tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), 1, t.TempDir()
	}
	open := func() exec.Operator {
		op := opTestNew(t, "stream_join", cfg, out)
		if err := op.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		if (op.(*streamJoinOp).disk != nil) != (backend == StateDisk) {
			t.Fatalf("backend %s, disk state %v", backend, op.(*streamJoinOp).disk != nil)
		}
		return op
	}
	op := open()
	defer func() { op.Close(ctx) }()
	held := [2]map[sjRow]int{{}, {}}
	keyVals := []int64{1, 2, 3}
	got := map[string]int{}
	c := &testkit.Collector{T: t}
	restores := 0
	for step := range 120 {
		s := rng.IntN(2)
		n := 1 + rng.IntN(5)
		var objs []string
		var ops []exec.ChangeKind
		for range n {
			var r sjRow
			op := exec.Insert
			if len(held[s]) > 0 && rng.IntN(5) < 2 {
				rows := slices.SortedFunc(maps.Keys(held[s]), func(a, b sjRow) int {
					return strings.Compare(fmt.Sprint(a.vals()), fmt.Sprint(b.vals()))
				})
				r = rows[rng.IntN(len(rows))]
				op = exec.Delete
				if rng.IntN(2) == 0 {
					op = exec.UpdateBefore
				}
				if held[s][r]--; held[s][r] == 0 {
					delete(held[s], r)
				}
			} else {
				if k := rng.IntN(len(keyVals) + 1); k < len(keyVals) {
					r.k = &keyVals[k]
				}
				r.text = text
				r.v = string(rune('a' + rng.IntN(3)))
				if rng.IntN(2) == 0 {
					op = exec.UpdateAfter
				}
				held[s][r]++
			}
			if s == 0 {
				objs = append(objs, r.json("lk", "lv"))
			} else {
				objs = append(objs, r.json("rk", "rv"))
			}
			ops = append(ops, op)
		}
		schema := left
		if s == 1 {
			schema = right
		}
		rec := testkit.Record(t, mem, schema, "["+strings.Join(objs, ",")+"]")
		c.Rows = c.Rows[:0]
		err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec, Ops: ops}, c)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		sjFold(t, got, c.Rows)
		if rng.IntN(4) > 0 {
			continue
		}
		// A barrier: it passes through, and the output holds the join.
		c.Signals = c.Signals[:0]
		if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Barrier, Checkpoint: int64(step + 1)}, c); err != nil {
			t.Fatal(err)
		}
		if len(c.Signals) != 1 || c.Signals[0].Kind != exec.Barrier {
			t.Fatalf("barrier: signals %v", c.Signals)
		}
		want := sjExpectedKeys(kind, extra, keys == "both", held[0], held[1])
		if !maps.Equal(got, want) {
			t.Fatalf("after step %d:\n got %v\nwant %v", step, got, want)
		}
		if rng.IntN(3) == 0 {
			data, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(step+1))
			if err != nil {
				t.Fatal(err)
			}
			op.Close(ctx)
			op = open()
			if err := op.(exec.Checkpointed).RestoreState(ctx, data); err != nil {
				t.Fatal(err)
			}
			restores++
		}
	}
	if want := sjExpectedKeys(kind, extra, keys == "both", held[0], held[1]); !maps.Equal(got, want) {
		t.Fatalf("at the end:\n got %v\nwant %v", got, want)
	}
	if restores == 0 {
		t.Logf("no restore in this run")
	}
}

// TestStreamJoinOuterRetracts follows one left join by hand: the NULL-padded
// row goes when the first match comes, and comes back when the last goes.
func TestStreamJoinOuterRetracts(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op := opTestNew(t, "stream_join", sjConfig("left", false), sjOut)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	steps := []struct {
		input int
		rows  string
		ops   []exec.ChangeKind
		want  []string
	}{
		{0, `[{"lk": 1, "lv": "a"}]`, nil, []string{`[1,"a",null,null]`}},
		{1, `[{"rk": 1, "rv": "x"}, {"rk": 1, "rv": "y"}]`, nil,
			[]string{`delete [1,"a",null,null]`, `[1,"a",1,"x"]`, `[1,"a",1,"y"]`}},
		{1, `[{"rk": 1, "rv": "x"}]`, []exec.ChangeKind{exec.Delete}, []string{`delete [1,"a",1,"x"]`}},
		{1, `[{"rk": 1, "rv": "y"}]`, []exec.ChangeKind{exec.UpdateBefore},
			[]string{`delete [1,"a",1,"y"]`, `[1,"a",null,null]`}},
		{1, `[{"rk": 2, "rv": "z"}]`, nil, nil},
		{0, `[{"lk": 1, "lv": "a"}]`, []exec.ChangeKind{exec.Delete}, []string{`delete [1,"a",null,null]`}},
		{0, `[{"lk": 9, "lv": "q"}]`, []exec.ChangeKind{exec.Delete}, nil}, // not held: dropped
	}
	for i, st := range steps {
		schema := sjLeft
		if st.input == 1 {
			schema = sjRight
		}
		c := &testkit.Collector{T: t}
		rec := testkit.Record(t, mem, schema, st.rows)
		err := op.ProcessBatch(ctx, st.input, exec.Batch{Rec: rec, Ops: st.ops}, c)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		testkit.Equal(t, fmt.Sprintf("step %d", i), c.Rows, st.want)
	}
}

// TestStreamJoinTTL drops rows not written for the TTL at a tick.
func TestStreamJoinTTL(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := sjConfig("inner", false)
	cfg.TTLMillis = 60_000
	op := opTestNew(t, "stream_join", cfg, sjOut)
	clock := time.Unix(1_000_000, 0)
	op.(*streamJoinOp).now = func() time.Time { return clock }
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	feed := func(input int, rows string) []string {
		t.Helper()
		schema := sjLeft
		if input == 1 {
			schema = sjRight
		}
		c := &testkit.Collector{T: t}
		rec := testkit.Record(t, mem, schema, rows)
		defer rec.Release()
		if err := op.ProcessBatch(ctx, input, exec.Batch{Rec: rec}, c); err != nil {
			t.Fatal(err)
		}
		return c.Rows
	}
	tick := func() {
		if err := op.(exec.Ticker).Tick(ctx, clock, &testkit.Collector{T: t}); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, `[{"lk": 1, "lv": "old"}]`)
	clock = clock.Add(50 * time.Second)
	feed(0, `[{"lk": 1, "lv": "new"}]`)
	tick()
	testkit.Equal(t, "within the TTL", feed(1, `[{"rk": 1, "rv": "x"}]`), []string{`[1,"old",1,"x"]`, `[1,"new",1,"x"]`})
	clock = clock.Add(20 * time.Second) // old: 70 s idle; new: 20 s
	tick()
	testkit.Equal(t, "after the old row's TTL", feed(1, `[{"rk": 1, "rv": "y"}]`), []string{`[1,"new",1,"y"]`})
}

// TestStreamJoinCompacts: once most rows a side's tables ever held are gone,
// the side's tables are rebuilt from the rows held, and the join goes on
// as before (against the nested-loop join of the rows held).
func TestStreamJoinCompacts(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op := opTestNew(t, "stream_join", sjConfig("full", true), sjOut)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	held := [2]map[sjRow]int{{}, {}}
	got := map[string]int{}
	keys := []int64{0, 1, 2, 3, 4}
	feed := func(s int, rows []sjRow, op0 exec.ChangeKind) {
		t.Helper()
		var objs []string
		ops := make([]exec.ChangeKind, len(rows))
		for i, r := range rows {
			if s == 0 {
				objs = append(objs, r.json("lk", "lv"))
			} else {
				objs = append(objs, r.json("rk", "rv"))
			}
			ops[i] = op0
			if op0 == exec.Insert {
				held[s][r]++
			} else if held[s][r]--; held[s][r] == 0 {
				delete(held[s], r)
			}
		}
		schema := sjLeft
		if s == 1 {
			schema = sjRight
		}
		rec := testkit.Record(t, mem, schema, "["+strings.Join(objs, ",")+"]")
		defer rec.Release()
		c := &testkit.Collector{T: t}
		if err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec, Ops: ops}, c); err != nil {
			t.Fatal(err)
		}
		sjFold(t, got, c.Rows)
	}
	feed(1, []sjRow{{k: &keys[1], v: "x"}, {k: &keys[2], v: "7"}}, exec.Insert)
	const n, batch = 70_000, 5_000
	row := func(i int) sjRow { return sjRow{k: &keys[i%len(keys)], v: fmt.Sprint(i)} }
	for lo := 0; lo < n; lo += batch {
		var rows []sjRow
		for i := lo; i < lo+batch; i++ {
			rows = append(rows, row(i))
		}
		feed(0, rows, exec.Insert)
	}
	for lo := 0; lo < n; lo += batch {
		var rows []sjRow
		for i := lo; i < lo+batch; i++ {
			if i%10_000 != 7 {
				rows = append(rows, row(i))
			}
		}
		feed(0, rows, exec.Delete)
	}
	if m := op.(*streamJoinOp).side[0].rows.Len(); m > 100 {
		t.Errorf("the left side's rows table has %d ids for %d rows held", m, len(held[0]))
	}
	feed(1, []sjRow{{k: &keys[2], v: "y"}, {k: &keys[1], v: "x"}}, exec.Insert)
	feed(1, []sjRow{{k: &keys[2], v: "7"}}, exec.Delete)
	feed(0, []sjRow{row(1), row(2)}, exec.Insert)
	if want := sjExpected("full", true, held[0], held[1]); !maps.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// BenchmarkStreamJoin joins 2^16-row batches of a bigint key and a text
// value, alternating sides, over 2^15 keys.
func BenchmarkStreamJoin(b *testing.B) {
	ctx := context.Background()
	mem := memory.NewGoAllocator()
	op := opTestNew(b, "stream_join", sjConfig("inner", false), sjOut)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		b.Fatal(err)
	}
	defer op.Close(ctx)
	const rows = 1 << 16
	var recs [2]string
	for s, names := range [2][2]string{{"lk", "lv"}, {"rk", "rv"}} {
		var objs []string
		for i := range rows {
			k := int64(i % (1 << 15))
			objs = append(objs, sjRow{k: &k, v: fmt.Sprint("v", i)}.json(names[0], names[1]))
		}
		recs[s] = "[" + strings.Join(objs, ",") + "]"
	}
	l := testkit.Record(b, mem, sjLeft, recs[0])
	r := testkit.Record(b, mem, sjRight, recs[1])
	defer l.Release()
	defer r.Release()
	var out int
	count := testkit.Func(func(bt exec.Batch) error { out += bt.NumRows(); return nil })
	b.ResetTimer()
	for i := range b.N {
		rec := l
		if i%2 == 1 {
			rec = r
		}
		if err := op.ProcessBatch(ctx, i%2, exec.Batch{Rec: rec}, count); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(out)/float64(b.N), "out/op")
}

// TestStreamJoinCloseFrees: Close leaves the operator holding none of its
// state, neither the tables nor the per-key and per-row slices beside them: a
// finished job's operators stay reachable while the job is listed, and a
// join's state is the size of its input.
func TestStreamJoinCloseFrees(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op := opTestNew(t, "stream_join", sjConfig("inner", true), sjOut)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	keys := []int64{0, 1, 2}
	for s, schema := range []types.Schema{sjLeft, sjRight} {
		var objs []string
		for i := range 100 {
			r := sjRow{k: &keys[i%len(keys)], v: fmt.Sprint(i)}
			if s == 0 {
				objs = append(objs, r.json("lk", "lv"))
			} else {
				objs = append(objs, r.json("rk", "rv"))
			}
		}
		rec := testkit.Record(t, mem, schema, "["+strings.Join(objs, ",")+"]")
		err := op.ProcessBatch(ctx, s, exec.Batch{Rec: rec}, &testkit.Collector{T: t})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	sj := op.(*streamJoinOp)
	if sj.side[0].rowKey == nil || sj.side[1].members == nil {
		t.Fatal("the sides hold no rows before Close: the test feeds nothing")
	}
	if err := op.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for s, sd := range sj.side {
		if sd.keys != nil || sd.rows != nil || sd.members != nil || sd.rowKey != nil || sd.pos != nil || sd.count != nil ||
			sd.matches != nil || sd.touched != nil || sd.keyIDs != nil || sd.rowIDs != nil || sd.live != 0 {
			t.Errorf("side %d still holds state after Close", s)
		}
	}
}

package operators

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// joinStateConfigs are the joins the state tests run: inner and left, on a
// bigint key, a text key and both. The inputs are joinLeft and joinRight (lk,
// ls, lv and rk, rs, rv), with NULL keys.
var joinStateConfigs = []struct {
	name string
	cfg  JoinConfig
}{
	{"inner on bigint", JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}}},
	{"left on bigint", JoinConfig{Kind: "left", LeftKeys: []int{0}, RightKeys: []int{0}}},
	{"inner on text", JoinConfig{Kind: "inner", LeftKeys: []int{1}, RightKeys: []int{1}}},
	{"left on text", JoinConfig{Kind: "left", LeftKeys: []int{1}, RightKeys: []int{1},
		Left: joinLeft, Right: joinRight}},
	{"left on both", JoinConfig{Kind: "left", LeftKeys: []int{1, 0}, RightKeys: []int{1, 0}}},
}

// joinStateEvent is one step of a script: a batch or a signal on an input.
type joinStateEvent struct {
	input int
	batch exec.Batch // when batch.Rec is nil, sig
	sig   exec.Signal
}

// joinStateScript turns a script into events and the batches they carry (the
// caller releases them): 'L' and 'R' a random batch on the left or the right
// (possibly empty; a left one with change kinds or not), 'l' and 'r' the end
// of the left or right side, 'a' and 'b' a watermark on the left or right,
// growing along the script. '|' marks the snapshot: the events before it are
// the first list, the rest the second.
func joinStateScript(t *testing.T, rng *rand.Rand, mem memory.Allocator, script string) (before, after []joinStateEvent, left, right []exec.Batch) {
	t.Helper()
	words := []string{`"a"`, `"b"`, `""`, `"a word longer than sixteen bytes"`, "null"}
	key := func() string {
		if rng.IntN(6) == 0 {
			return "null"
		}
		return fmt.Sprint(rng.IntN(4))
	}
	rows := func(prefix string, cols [3]string, ops *[]exec.ChangeKind) string {
		var rs []string
		for range rng.IntN(6) {
			rs = append(rs, fmt.Sprintf(`{%q: %s, %q: %s, %q: "%s%d"}`,
				cols[0], key(), cols[1], words[rng.IntN(len(words))], cols[2], prefix, rng.IntN(1000)))
			if ops != nil {
				*ops = append(*ops, exec.ChangeKind(rng.IntN(int(exec.UpdateAfter)+1)))
			}
		}
		return "[" + strings.Join(rs, ",") + "]"
	}
	var events []joinStateEvent
	cut := -1
	for i, step := range script {
		switch step {
		case 'L':
			var ops []exec.ChangeKind
			withOps := rng.IntN(2) == 0
			var p *[]exec.ChangeKind
			if withOps {
				p = &ops
			}
			b := testkit.Batches(t, mem, joinLeft, rows("L", [3]string{"lk", "ls", "lv"}, p))[0]
			if withOps && len(ops) > 0 {
				b.Ops = ops
			}
			left = append(left, b)
			events = append(events, joinStateEvent{input: 0, batch: b})
		case 'R':
			b := testkit.Batches(t, mem, joinRight, rows("R", [3]string{"rk", "rs", "rv"}, nil))[0]
			right = append(right, b)
			events = append(events, joinStateEvent{input: 1, batch: b})
		case 'l', 'r':
			events = append(events, joinStateEvent{input: strings.IndexRune("lr", step), sig: exec.Signal{Kind: exec.EndOfStream}})
		case 'a', 'b':
			events = append(events, joinStateEvent{input: strings.IndexRune("ab", step),
				sig: exec.Signal{Kind: exec.Watermark, Watermark: int64(10 * i)}})
		case '|':
			cut = len(events)
		default:
			t.Fatalf("script %q: step %q", script, step)
		}
	}
	if cut < 0 {
		t.Fatalf("script %q has no snapshot mark", script)
	}
	return events[:cut], events[cut:], left, right
}

func joinStateApply(t *testing.T, op exec.Operator, c exec.Collector, e joinStateEvent) {
	t.Helper()
	ctx := context.Background()
	var err error
	if e.batch.Rec != nil {
		err = op.ProcessBatch(ctx, e.input, e.batch, c)
	} else {
		err = op.ProcessSignal(ctx, e.input, e.sig, c)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// joinStateOpen returns a new, opened hash_join.
func joinStateOpen(t *testing.T, mem memory.Allocator, cfg JoinConfig, out types.Schema) exec.Operator {
	t.Helper()
	op := opTestNew(t, "hash_join", cfg, out)
	if err := op.Open(context.Background(), testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	return op
}

// joinStateExpected is the join of all left rows with all right rows by
// nested loops, as opTestCollector formats rows, sorted.
func joinStateExpected(cfg JoinConfig, left, right []exec.Batch) []string {
	var out []string
	emit := func(lb exec.Batch, i int, rb *exec.Batch, j int) {
		var vals []any
		for _, c := range lb.Rec.Columns() {
			vals = append(vals, testkit.Value(c, i))
		}
		for c := range joinRight {
			if rb == nil {
				vals = append(vals, nil)
			} else {
				vals = append(vals, testkit.Value(rb.Rec.Column(c), j))
			}
		}
		js, err := json.Marshal(vals)
		if err != nil {
			panic(err)
		}
		s := string(js)
		if op := lb.Op(i); op != exec.Insert {
			s = op.String() + " " + s
		}
		out = append(out, s)
	}
	for _, lb := range left {
		for i := range lb.NumRows() {
			found := false
			for r := range right {
				rb := &right[r]
				for j := range rb.NumRows() {
					match := true
					for k, lc := range cfg.LeftKeys {
						lv := testkit.Value(lb.Rec.Column(lc), i)
						rv := testkit.Value(rb.Rec.Column(cfg.RightKeys[k]), j)
						if lv == nil || rv == nil || lv != rv {
							match = false
						}
					}
					if match {
						found = true
						emit(lb, i, rb, j)
					}
				}
			}
			if !found && cfg.Kind == "left" {
				emit(lb, i, nil, 0)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestHashJoinState runs scripts on a join, snapshots it at the script's mark,
// restores the snapshot into a fresh join (and that one's own snapshot into a
// third), and runs the rest of the script on all of them in step: they must
// emit the same rows and signals after every step, and the rows emitted before
// the mark plus the restored join's must be the join by nested loops.
func TestHashJoinState(t *testing.T) {
	scripts := []string{
		"RRr|LaLl",        // the build side complete: the restored join probes at once
		"RRbr|aLLl",       // the same, the watermark of the left input only after
		"LRaL|RbrLl",      // left batches wait, the right side has not ended
		"aLLbR|RLrl",      // the same, with watermarks of both inputs
		"LLl|RRr",         // the left side ended while its batches wait
		"|RLLRrl",         // nothing yet
		"|lr",             // nothing at all
		"Lr|Ll",           // an empty build side, ended
		"L|LrLl",          // an empty build side, not ended
		"R|Rrl",           // no left batches
		"RLRrLl|",         // both sides ended
		"RRRRRLRLaLbRrl|", // several right batches, concatenated at the build
		"LLLRRRaLb|LRrl",  // several pending ones
	}
	for _, jc := range joinStateConfigs {
		for si, script := range scripts {
			t.Run(jc.name+"/"+script, func(t *testing.T) {
				for seed := range uint64(8) {
					joinStateOne(t, jc.cfg, script, rand.New(rand.NewPCG(seed, uint64(si))))
				}
			})
		}
	}
}

func joinStateOne(t *testing.T, cfg JoinConfig, script string, rng *rand.Rand) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	before, after, left, right := joinStateScript(t, rng, mem, script)
	defer testkit.Release(left)
	defer testkit.Release(right)

	orig := joinStateOpen(t, mem, cfg, joinOut)
	defer orig.Close(ctx)
	first := &testkit.Collector{T: t}
	for _, e := range before {
		joinStateApply(t, orig, first, e)
	}
	snap, err := orig.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	restored := joinStateOpen(t, mem, cfg, joinOut)
	defer restored.Close(ctx)
	if err := restored.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
		t.Fatal(err)
	}
	// A snapshot of the restored join, before any input, restores too.
	snap2, err := restored.(exec.Checkpointed).SnapshotState(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	again := joinStateOpen(t, mem, cfg, joinOut)
	defer again.Close(ctx)
	if err := again.(exec.Checkpointed).RestoreState(ctx, snap2); err != nil {
		t.Fatal(err)
	}

	ops := []exec.Operator{orig, restored, again}
	names := []string{"original", "restored", "restored twice"}
	outs := []*testkit.Collector{{T: t}, {T: t}, {T: t}}
	for _, e := range after {
		for i, op := range ops {
			joinStateApply(t, op, outs[i], e)
		}
		for i := 1; i < len(ops); i++ {
			if !slices.Equal(outs[i].Rows, outs[0].Rows) || !slices.Equal(outs[i].Signals, outs[0].Signals) {
				t.Fatalf("%s: after event %+v:\n rows %v signals %v\n the original's: rows %v signals %v",
					names[i], e, outs[i].Rows, outs[i].Signals, outs[0].Rows, outs[0].Signals)
			}
		}
	}
	got := append(slices.Clone(first.Rows), outs[1].Rows...)
	slices.Sort(got)
	testkit.Equal(t, script+": rows before the snapshot and of the restored join", got, joinStateExpected(cfg, left, right))
	allSignals := append(slices.Clone(first.Signals), outs[1].Signals...)
	if n := len(allSignals); n == 0 || allSignals[n-1].Kind != exec.EndOfStream {
		t.Errorf("%s: signals %v, want the end of stream last", script, allSignals)
	}
}

// joinStateSnapshot returns the snapshot of a join of joinLeftRows and
// joinRightRows after the given script of join_hash_test.go's joinRun
// ('L', 'R', 'l', 'r').
func joinStateSnapshot(t *testing.T, mem memory.Allocator, cfg JoinConfig, out types.Schema, order string) []byte {
	t.Helper()
	ctx := context.Background()
	left := testkit.Batches(t, mem, joinLeft, joinLeftRows...)
	defer testkit.Release(left)
	right := testkit.Batches(t, mem, joinRight, joinRightRows...)
	defer testkit.Release(right)
	left[0].Ops = []exec.ChangeKind{exec.Delete, exec.Insert, exec.UpdateAfter}
	op := joinStateOpen(t, mem, cfg, out)
	defer op.Close(ctx)
	c := &testkit.Collector{T: t}
	li, ri := 0, 0
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
		case 'r':
			err = op.ProcessSignal(ctx, 1, exec.Signal{Kind: exec.EndOfStream}, c)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// joinStateFresh checks that op, after failed restores, joins as a new join
// does.
func joinStateFresh(t *testing.T, op exec.Operator, mem memory.Allocator, cfg JoinConfig, what string) {
	t.Helper()
	ctx := context.Background()
	left := testkit.Batches(t, mem, joinLeft, joinLeftRows...)
	defer testkit.Release(left)
	right := testkit.Batches(t, mem, joinRight, joinRightRows...)
	defer testkit.Release(right)
	c := &testkit.Collector{T: t}
	for _, step := range []struct {
		input int
		b     *exec.Batch
	}{{0, &left[0]}, {1, &right[0]}, {1, &right[1]}, {1, nil}, {0, &left[1]}, {0, nil}} {
		var err error
		if step.b != nil {
			err = op.ProcessBatch(ctx, step.input, *step.b, c)
		} else {
			err = op.ProcessSignal(ctx, step.input, exec.Signal{Kind: exec.EndOfStream}, c)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	testkit.Equal(t, what, c.Sorted(), joinStateExpected(cfg, left, right))
	if !slices.Equal(c.Signals, []exec.Signal{{Kind: exec.EndOfStream}}) {
		t.Errorf("%s: signals %v", what, c.Signals)
	}
}

func TestHashJoinStateBadBlobs(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	cfg := JoinConfig{Kind: "left", LeftKeys: []int{0}, RightKeys: []int{0}}
	// Right rows and pending left rows with change kinds: every section has
	// something.
	good := joinStateSnapshot(t, mem, cfg, joinOut, "LRL")
	built := joinStateSnapshot(t, mem, cfg, joinOut, "RRr")

	inner := joinStateSnapshot(t, mem, JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}}, joinOut, "LRL")
	otherKeys := joinStateSnapshot(t, mem, JoinConfig{Kind: "left", LeftKeys: []int{1}, RightKeys: []int{1}}, joinOut, "LRL")
	view := NewViewState(types.Schema{{Name: "w", Type: types.StringType}})
	viewBlob, err := view.snapshotState(mem)
	if err != nil {
		t.Fatal(err)
	}
	newVersion := slices.Clone(good)
	binary.LittleEndian.PutUint16(newVersion[4:], hashJoinStateVersion+1)
	stateTestReseal(newVersion)

	// One operator takes every bad blob: a failed restore leaves it fresh.
	op := joinStateOpen(t, mem, cfg, joinOut)
	defer op.Close(ctx)
	restore := op.(exec.Checkpointed).RestoreState
	bad := map[string][]byte{
		"nil":         nil,
		"garbage":     []byte("garbage, not a checkpoint state at all"),
		"view state":  viewBlob,
		"new version": newVersion,
		"inner join":  inner,
		"other keys":  otherKeys,
		"trailing":    append(slices.Clone(good), 0),
	}
	for name, blob := range bad {
		if err := restore(ctx, blob); !errors.Is(err, state.ErrBadState) {
			t.Errorf("%s: err = %v, want a bad state", name, err)
		}
	}
	for _, blob := range [][]byte{good, built} {
		for n := range len(blob) {
			if err := restore(ctx, blob[:n]); !errors.Is(err, state.ErrBadState) {
				t.Fatalf("truncated to %d of %d bytes: err = %v, want a bad state", n, len(blob), err)
			}
		}
		for i := range len(blob) {
			b := slices.Clone(blob)
			b[i] ^= 1 << (i % 8)
			if err := restore(ctx, b); !errors.Is(err, state.ErrBadState) {
				t.Fatalf("bit %d of byte %d flipped: err = %v, want a bad state", i%8, i, err)
			}
		}
	}
	joinStateFresh(t, op, mem, cfg, "after the bad blobs")

	// Into a join whose right side is of other types: a clear error.
	otherOut := append(append(types.Schema{}, joinLeft...),
		types.Field{Name: "rk", Type: types.StringType}, joinRight[1], joinRight[2])
	b := joinStateOpen(t, mem, cfg, otherOut)
	defer b.Close(ctx)
	err = b.(exec.Checkpointed).RestoreState(ctx, built)
	if !errors.Is(err, state.ErrBadState) || !strings.Contains(err.Error(), "right side of") {
		t.Errorf("into a join of other right columns: err = %v, want a bad state naming the right side", err)
	}
	// Or other declared sides.
	declared := cfg
	declared.Left = append(types.Schema{}, joinLeft...)
	declared.Left[2].Type = types.Int64Type
	c := joinStateOpen(t, mem, declared, joinOut)
	defer c.Close(ctx)
	err = c.(exec.Checkpointed).RestoreState(ctx, good)
	if !errors.Is(err, state.ErrBadState) || !strings.Contains(err.Error(), "left side of") {
		t.Errorf("into a join of another declared left side: err = %v, want a bad state naming the left side", err)
	}
}

// TestHashJoinStateInconsistent restores blobs with a sound envelope whose
// sections do not agree with each other or with the operator: each is an
// error, and the operator stays fresh.
func TestHashJoinStateInconsistent(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	cfg := JoinConfig{Kind: "left", LeftKeys: []int{0}, RightKeys: []int{0}}
	good := joinStateSnapshot(t, mem, cfg, joinOut, "LRL")
	sections, err := state.Decode("test", hashJoinStateMagic, hashJoinStateVersion, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(sections) != 3 || len(sections[1]) == 0 || len(sections[2]) == 0 {
		t.Fatalf("sections of %v bytes, want a header, right rows and pending rows", func() (n []int) {
			for _, s := range sections {
				n = append(n, len(s))
			}
			return n
		}())
	}
	var h hashJoinStateHeader
	if err := json.Unmarshal(sections[0], &h); err != nil {
		t.Fatal(err)
	}
	header := func(edit func(h *hashJoinStateHeader)) []byte {
		h2 := h
		edit(&h2)
		js, err := json.Marshal(h2)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	with := func(i int, sec []byte) [][]byte {
		out := slices.Clone(sections)
		out[i] = sec
		return out
	}
	// Pending rows with a change kind that does not exist.
	badKinds := func() []byte {
		fields := append(joinLeft.Arrow().Fields(), arrow.Field{Name: "change_kind", Type: arrow.PrimitiveTypes.Int8})
		schema := arrow.NewSchema(fields, nil)
		rec := testkit.Record(t, mem, joinLeft, `[{"lk": 1, "ls": "a", "lv": "x"}]`)
		defer rec.Release()
		kb := array.NewInt8Builder(mem)
		defer kb.Release()
		kb.Append(9)
		cols := slices.Clone(rec.Columns())
		for _, c := range cols {
			c.Retain()
		}
		r2, err := vector.MakeRecord(schema, append(cols, kb.NewArray()), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer r2.Release()
		data, err := state.WriteIPC(mem, schema, r2)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}()
	h1 := h
	h1.PendingRows = 1
	js1, err := json.Marshal(h1)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][][]byte{
		"no sections":         nil,
		"a section missing":   sections[:2],
		"header not JSON":     with(0, []byte("{")),
		"more right rows":     with(0, header(func(h *hashJoinStateHeader) { h.RightRows++ })),
		"fewer pending rows":  with(0, header(func(h *hashJoinStateHeader) { h.PendingRows-- })),
		"right side ended":    with(0, header(func(h *hashJoinStateHeader) { h.Ended[1] = true })),
		"other kind":          with(0, header(func(h *hashJoinStateHeader) { h.Kind = "inner" })),
		"right not IPC":       with(1, []byte("not arrow")),
		"pending not IPC":     with(2, []byte("not arrow")),
		"no right rows":       with(1, nil),
		"no pending rows":     with(2, nil),
		"sides swapped":       {sections[0], sections[2], sections[1]},
		"pending as right":    with(1, sections[2]),
		"unknown change kind": {js1, sections[1], badKinds},
	}
	for name, secs := range bad {
		op := joinStateOpen(t, mem, cfg, joinOut)
		err := op.(exec.Checkpointed).RestoreState(ctx, state.Encode(hashJoinStateMagic, hashJoinStateVersion, secs...))
		if !errors.Is(err, state.ErrBadState) {
			t.Errorf("%s: err = %v, want a bad state", name, err)
		}
		joinStateFresh(t, op, mem, cfg, name+": after the failed restore")
		op.Close(ctx)
	}
}

func TestHashJoinStateErrors(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	cfg := JoinConfig{Kind: "inner", LeftKeys: []int{0}, RightKeys: []int{0}}
	op := opTestNew(t, "hash_join", cfg, joinOut)
	if _, err := op.(exec.Checkpointed).SnapshotState(ctx, 1); err == nil {
		t.Error("snapshot before Open: no error")
	}
	if err := op.(exec.Checkpointed).RestoreState(ctx, nil); err == nil {
		t.Error("restore before Open: no error")
	}
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	snap, err := op.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A restore is for a fresh operator, even after a watermark only.
	c := &testkit.Collector{T: t}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: 5}, c); err != nil {
		t.Fatal(err)
	}
	if err := op.(exec.Checkpointed).RestoreState(ctx, snap); err == nil {
		t.Error("restore after input: no error")
	}
	// A restored join whose right side had ended refuses right batches, as
	// the original does.
	ended := joinStateSnapshot(t, mem, cfg, joinOut, "Rr")
	b := joinStateOpen(t, mem, cfg, joinOut)
	defer b.Close(ctx)
	if err := b.(exec.Checkpointed).RestoreState(ctx, ended); err != nil {
		t.Fatal(err)
	}
	right := testkit.Batches(t, mem, joinRight, joinRightRows[1])
	defer testkit.Release(right)
	if err := b.ProcessBatch(ctx, 1, right[0], c); err == nil {
		t.Error("right batch after restoring an ended right side: no error")
	}
}

// TestHashJoinStateKeep: a join that keeps some columns of its pairs
// (JoinConfig.Keep; the output narrower than a pair, in another order)
// restores from its snapshot and goes on as the original does.
func TestHashJoinStateKeep(t *testing.T) {
	keep := []int{5, 0}
	out := types.Schema{joinOut[5], joinOut[0]}
	for _, kind := range []string{"inner", "left"} {
		cfg := JoinConfig{Kind: kind, LeftKeys: []int{0}, RightKeys: []int{0}, Left: joinLeft, Right: joinRight, Keep: keep}
		for si, script := range []string{"RRL|LrLl", "LLRa|RrLbl", "RLRrL|Ll"} {
			t.Run(kind+"/"+script, func(t *testing.T) {
				mem := testkit.Mem()
				defer mem.AssertSize(t, 0)
				ctx := context.Background()
				before, after, left, right := joinStateScript(t, rand.New(rand.NewPCG(9, uint64(si))), mem, script)
				defer testkit.Release(left)
				defer testkit.Release(right)
				orig := joinStateOpen(t, mem, cfg, out)
				defer orig.Close(ctx)
				for _, e := range before {
					joinStateApply(t, orig, &testkit.Collector{T: t}, e)
				}
				snap, err := orig.(exec.Checkpointed).SnapshotState(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				restored := joinStateOpen(t, mem, cfg, out)
				defer restored.Close(ctx)
				if err := restored.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
					t.Fatal(err)
				}
				a, b := &testkit.Collector{T: t}, &testkit.Collector{T: t}
				for _, e := range after {
					joinStateApply(t, orig, a, e)
					joinStateApply(t, restored, b, e)
				}
				if len(a.Rows) == 0 {
					t.Fatal("no rows after the snapshot: a test that cannot tell")
				}
				testkit.Equal(t, "rows", b.Rows, a.Rows)
			})
		}
	}
}

package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// overWinIn is the over_window tests' input: a partition, an order key, two
// values, any of them NULL, and the start of the RANGE frame of 3 before t
// (as the planner computes it below the window: t-3 ascending, t+3
// descending).
var overWinIn = types.Schema{{Name: "k", Type: types.StringType}, {Name: "t", Type: types.Int64Type},
	{Name: "v", Type: types.Float64Type}, {Name: "u", Type: types.Int64Type}, {Name: "sb", Type: types.Int64Type}}

// overWinFuncs are the tests' functions: what they compute, their ROWS
// frames as (start, end) offsets, or (rng) RANGE BETWEEN 3 PRECEDING AND
// CURRENT ROW.
var overWinFuncs = []struct {
	fn         string
	arg        int // -1: count(*)
	start, end int64
	typ        types.Type
	rng        bool
}{
	{"count", -1, -2, 0, types.Int64Type, false},
	{"count", 2, -1, 0, types.Int64Type, false},
	{"sum", 2, -3, 0, types.Float64Type, false},
	{"avg", 2, -10, 0, types.Float64Type, false},
	{"min", 3, -1, 0, types.Int64Type, false},
	{"max", 3, -3, -1, types.Int64Type, false},
	{"sum", 2, 0, 0, types.Float64Type, true},
	{"count", -1, 0, 0, types.Int64Type, true},
}

func overWinConfig(partition bool, desc, nullsFirst bool) (OverWindowConfig, types.Schema) {
	cfg := OverWindowConfig{Window: WindowConfig{Order: []SortKeySpec{{Col: 1, Desc: desc, NullsFirst: nullsFirst}}}}
	if partition {
		cfg.Window.Partition = []int{0}
	}
	out := slices.Clone(overWinIn)
	for i, f := range overWinFuncs {
		spec := WindowFuncSpec{Func: f.fn, Default: -1, Frame: WindowFrame{Rows: true, Start: f.start, End: f.end}, Type: f.typ}
		if f.rng {
			spec.Frame = WindowFrame{StartOffset: true, RangeKey: 1, StartBound: 4}
		}
		if f.arg >= 0 {
			spec.Args = []int{f.arg}
		}
		cfg.Window.Funcs = append(cfg.Window.Funcs, spec)
		out = append(out, types.Field{Name: fmt.Sprintf("f%d", i), Type: f.typ})
	}
	return cfg, out
}

type overWinRow struct {
	k   any // string or nil
	t   any // int64 or nil
	v   any // float64 or nil
	u   any // int64 or nil
	sb  any // int64 or nil
	seq int
}

func (r overWinRow) fields() map[string]any {
	return map[string]any{"k": r.k, "t": r.t, "v": r.v, "u": r.u, "sb": r.sb}
}

func (r overWinRow) json() string {
	b, _ := json.Marshal(r.fields())
	return string(b)
}

// overWinRef is the reference: every row held with its arrival number; its
// answer is computed from scratch, by definition, frame by frame.
type overWinRef struct {
	partition        bool
	desc, nullsFirst bool
	rows             []overWinRow
	seq              int
}

func (f *overWinRef) add(r overWinRow) {
	f.seq++
	r.seq = f.seq
	f.rows = append(f.rows, r)
}

// remove takes out the latest-arrived equal row, as the operator's
// contract says; a row not held is ignored.
func (f *overWinRef) remove(r overWinRow) {
	at := -1
	for i, h := range f.rows {
		if h.k == r.k && h.t == r.t && h.v == r.v && h.u == r.u && (at < 0 || h.seq > f.rows[at].seq) {
			at = i
		}
	}
	if at >= 0 {
		f.rows = slices.Delete(f.rows, at, at+1)
	}
}

// less orders a partition's rows by t (its direction and NULLs' place),
// then by arrival.
func (f *overWinRef) less(a, b overWinRow) int {
	switch {
	case a.t == nil && b.t == nil:
	case a.t == nil || b.t == nil:
		if (a.t == nil) == f.nullsFirst {
			return -1
		}
		return 1
	case a.t.(int64) != b.t.(int64):
		c := 1
		if a.t.(int64) < b.t.(int64) {
			c = -1
		}
		if f.desc {
			c = -c
		}
		return c
	}
	return a.seq - b.seq
}

// answer is every row with its functions, as JSON objects.
func (f *overWinRef) answer() []string {
	parts := map[any][]overWinRow{}
	for _, r := range f.rows {
		var k any
		if f.partition {
			k = r.k
		}
		parts[k] = append(parts[k], r)
	}
	var out []string
	for _, rs := range parts {
		slices.SortFunc(rs, f.less)
		for p, r := range rs {
			m := r.fields()
			for i, fn := range overWinFuncs {
				lo, hi := max(0, p+int(fn.start)), p+int(fn.end) // inclusive
				if fn.rng {
					lo, hi = 0, len(rs)-1
				}
				var vals []any
				for q := lo; q <= hi; q++ {
					if fn.rng && !f.inRange(r, rs[q]) {
						continue
					}
					switch fn.arg {
					case -1:
						vals = append(vals, true)
					case 2:
						vals = append(vals, rs[q].v)
					case 3:
						vals = append(vals, rs[q].u)
					}
				}
				m[fmt.Sprintf("f%d", i)] = overWinAgg(fn.fn, vals)
			}
			b, _ := json.Marshal(m)
			out = append(out, string(b))
		}
	}
	return out
}

// inRange reports whether row q is in row p's RANGE frame of 3 before it:
// for a NULL key its peers, the NULL rows; else rows from 3 before its key,
// in the order's direction, to its peers.
func (f *overWinRef) inRange(p, q overWinRow) bool {
	if p.t == nil || q.t == nil {
		return p.t == nil && q.t == nil
	}
	d := p.t.(int64) - q.t.(int64)
	if f.desc {
		d = -d
	}
	return d >= 0 && d <= 3
}

// overWinAgg is SQL's aggregate fn over vals in frame order (NULLs, nil,
// skipped).
func overWinAgg(fn string, vals []any) any {
	var nn []any
	for _, v := range vals {
		if v != nil {
			nn = append(nn, v)
		}
	}
	switch fn {
	case "count":
		return len(nn)
	}
	if len(nn) == 0 {
		return nil
	}
	switch fn {
	case "sum", "avg":
		s := 0.0
		for _, v := range nn {
			s += v.(float64)
		}
		if fn == "avg" {
			s /= float64(len(nn))
		}
		return s
	}
	best := nn[0].(int64)
	for _, v := range nn[1:] {
		if x := v.(int64); fn == "min" && x < best || fn == "max" && x > best {
			best = x
		}
	}
	return best
}

// TestOverWindowRandom feeds over_window random batches of inserts and
// retractions (often of rows others' frames hold, ties and NULLs in the
// order key, NULL values), flushing at random, and after each flush applies
// what it emitted to a multiset, which must hold the reference's answer
// computed from scratch. At random cut points the operator is snapshotted,
// closed, and a new one restored from the snapshot, with changes flushed or
// not.
func TestOverWindowRandom(t *testing.T) {
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 6))
		ref := &overWinRef{partition: seed%5 != 0, desc: rng.IntN(2) == 0, nullsFirst: rng.IntN(2) == 0}
		cfg, out := overWinConfig(ref.partition, ref.desc, ref.nullsFirst)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if seed%2 == 0 { // compact the rows no longer held at every chance
				defer func(s int) { compactSlack = s }(compactSlack)
				compactSlack = 0
			}
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			ctx := context.Background()
			open := func() exec.Operator {
				op := opTestNew(t, "over_window", cfg, out)
				if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
					t.Fatal(err)
				}
				return op
			}
			op := open()
			defer func() { op.Close(ctx) }()
			view := &aggTestView{t: t}
			check := func(what string) {
				t.Helper()
				testkit.Equal(t, what, view.rows(), topnRows(t, out, ref.answer()))
			}
			for batch := range 1 + rng.IntN(30) {
				var rows []string
				var ops []exec.ChangeKind
				for range 1 + rng.IntN(15) {
					if len(ref.rows) > 0 && rng.IntN(3) == 0 {
						r := ref.rows[rng.IntN(len(ref.rows))]
						if rng.IntN(10) == 0 { // a row not held
							r.u = int64(1000)
						}
						ref.remove(r)
						rows = append(rows, r.json())
						ops = append(ops, []exec.ChangeKind{exec.Delete, exec.UpdateBefore}[rng.IntN(2)])
						continue
					}
					r := overWinRow{k: string(rune('a' + rng.IntN(3)))}
					if rng.IntN(8) == 0 {
						r.k = nil
					}
					if rng.IntN(10) > 0 {
						r.t = int64(rng.IntN(12))
						r.sb = r.t.(int64) - 3
						if ref.desc {
							r.sb = r.t.(int64) + 3
						}
					}
					if rng.IntN(6) > 0 {
						r.v = float64(rng.IntN(9))
					}
					if rng.IntN(6) > 0 {
						r.u = int64(rng.IntN(9))
					}
					ref.add(r)
					rows = append(rows, r.json())
					ops = append(ops, []exec.ChangeKind{exec.Insert, exec.UpdateAfter}[rng.IntN(2)])
				}
				b := testkit.Batches(t, mem, overWinIn, "["+strings.Join(rows, ",")+"]")[0]
				b.Ops = ops
				err := op.ProcessBatch(ctx, 0, b, view)
				b.Rec.Release()
				if err != nil {
					t.Fatal(err)
				}
				if rng.IntN(2) == 0 {
					if err := op.(exec.Flusher).Flush(ctx, view); err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("after batch %d", batch))
				}
				if rng.IntN(4) == 0 {
					snap, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(batch))
					if err != nil {
						t.Fatal(err)
					}
					op.Close(ctx)
					op = open()
					if err := op.(exec.Checkpointed).RestoreState(ctx, snap); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, view); err != nil {
				t.Fatal(err)
			}
			check("at the end")
		})
	}
}

// TestOverWindowLongPartition checks a change deep in a partition
// recomputes only the rows whose frames reach it: deleting the first of
// 1,000 rows of ROWS 2 PRECEDING frames retracts and reinserts the outputs
// of the rows it moved (three), and deletes its own.
func TestOverWindowLongPartition(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	cfg := OverWindowConfig{Window: WindowConfig{Order: []SortKeySpec{{Col: 1}}, Funcs: []WindowFuncSpec{
		{Func: "min", Args: []int{3}, Default: -1, Frame: WindowFrame{Rows: true, Start: -2}, Type: types.Int64Type}}}}
	out := append(slices.Clone(overWinIn), types.Field{Name: "m", Type: types.Int64Type})
	op := opTestNew(t, "over_window", cfg, out)
	if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	var rows []string
	for i := range 1000 {
		rows = append(rows, fmt.Sprintf(`{"k":"a","t":%d,"u":%d}`, i, i))
	}
	b := testkit.Batches(t, mem, overWinIn, "["+strings.Join(rows, ",")+"]")[0]
	view := &aggTestView{t: t}
	err := op.ProcessBatch(ctx, 0, b, view)
	b.Rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	if err := op.(exec.Flusher).Flush(ctx, view); err != nil {
		t.Fatal(err)
	}
	var changes []string
	rec := func(b exec.Batch) error {
		changes = append(changes, testkit.Rows(b)...) // each change named by its kind, an insert by none
		return nil
	}
	b = testkit.Batches(t, mem, overWinIn, `[{"k":"a","t":0,"u":0}]`)[0]
	b.Ops = []exec.ChangeKind{exec.Delete}
	err = op.ProcessBatch(ctx, 0, b, testkit.Func(rec))
	b.Rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	if err := op.(exec.Flusher).Flush(ctx, testkit.Func(rec)); err != nil {
		t.Fatal(err)
	}
	slices.Sort(changes)
	want := []string{`delete ["a",0,null,0,null,0]`, `delete ["a",1,null,1,null,0]`, `delete ["a",2,null,2,null,0]`,
		`["a",1,null,1,null,1]`, `["a",2,null,2,null,1]`}
	slices.Sort(want)
	testkit.Equal(t, "the changes of deleting the first row", changes, want)
}

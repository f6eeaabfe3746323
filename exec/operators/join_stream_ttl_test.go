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

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestStreamJoinTTLRandom: an inner stream join with a TTL of a minute, fed
// random inserts and deletes on both sides over 40 keys while a clock moves
// on by up to 20 s a batch, ticked now and then, and restored from its
// checkpoints into a fresh operator, on both backends (the disk one with its
// cache emptied after every batch, so that rows come from pebble and go
// through its time index). The output's changes, applied in order, must
// be a reference's: a row pairs with the other side's rows held when it
// comes (a delete with those held when it goes, and a delete of a row not
// held, gone by the TTL, changes nothing); a tick drops, without output,
// the rows not written (inserted or deleted a copy of) within the TTL.
func TestStreamJoinTTLRandom(t *testing.T) {
	for _, backend := range []string{StateMemory, StateDisk} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/%d", backend, seed), func(t *testing.T) { sjTTLRandomRun(t, backend, seed) })
		}
	}
}

// sjTTLHeld is a row the reference holds: its copies and time of last write.
type sjTTLHeld struct {
	copies  int
	touched time.Time
}

func sjTTLRandomRun(t *testing.T, backend string, seed uint64) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	const ttl = time.Minute
	rng := rand.New(rand.NewPCG(seed, 31))
	clock := time.Unix(1_000_000, 0)
	cfg := sjConfig("inner", false)
	cfg.TTLMillis, cfg.StateBackend = ttl.Milliseconds(), backend
	out := append(append(types.Schema{}, sjLeft...), sjRight...)
	// The clock the operators read, those restored too.
	now := func() time.Time { return clock }
	r := newDiskRun[*streamJoinOp](t, mem, 1, "stream_join", cfg, out, nil)
	defer r.Close()
	r.Op.now = now
	if (r.Op.disk != nil) != (backend == StateDisk) {
		t.Fatalf("backend %s, disk state %v", backend, r.Op.disk != nil)
	}

	keys := make([]int64, 40)
	for i := range keys {
		keys[i] = int64(i)
	}
	held := [2]map[sjRow]*sjTTLHeld{{}, {}}
	want := map[string]int{}
	pair := func(s int, me, other sjRow) string {
		l, rr := me, other
		if s == 1 {
			l, rr = other, me
		}
		js, err := json.Marshal(append(l.vals(), rr.vals()...))
		if err != nil {
			t.Fatal(err)
		}
		return string(js)
	}
	// apply is the reference's change of one row of side s.
	apply := func(s int, row sjRow, del bool) {
		h := held[s][row]
		if del && h == nil {
			return
		}
		for o, oh := range held[1-s] {
			if *o.k != *row.k {
				continue
			}
			p := pair(s, row, o)
			if del {
				if want[p] -= oh.copies; want[p] == 0 {
					delete(want, p)
				}
			} else {
				want[p] += oh.copies
			}
		}
		if h == nil {
			h = &sjTTLHeld{}
			held[s][row] = h
		}
		h.touched = clock
		if del {
			h.copies--
		} else {
			h.copies++
		}
		if h.copies == 0 {
			delete(held[s], row)
		}
	}

	got := map[string]int{}
	ticks := 0
	for step := range 300 {
		s := rng.IntN(2)
		var objs []string
		var ops []exec.ChangeKind
		for range 1 + rng.IntN(8) {
			var row sjRow
			del := false
			if rows := slices.SortedFunc(maps.Keys(held[s]), func(a, b sjRow) int {
				return strings.Compare(fmt.Sprint(a.vals()), fmt.Sprint(b.vals()))
			}); len(rows) > 0 && rng.IntN(4) == 0 {
				row, del = rows[rng.IntN(len(rows))], true
			} else {
				row = sjRow{k: &keys[rng.IntN(len(keys))], v: string(rune('a' + rng.IntN(4)))}
			}
			apply(s, row, del)
			name := "lk"
			if s == 1 {
				name = "rk"
			}
			objs = append(objs, row.json(name, name[:1]+"v"))
			if del {
				ops = append(ops, exec.Delete)
			} else {
				ops = append(ops, exec.Insert)
			}
		}
		sjFold(t, got, r.FeedChanges(s, sjSide(s), objs, ops))
		clock = clock.Add(time.Duration(rng.IntN(20)) * time.Second)
		if rng.IntN(5) == 0 {
			// A tick the operator acts on: at least a tenth of the TTL
			// after the last.
			clock = clock.Add(ttl / 10)
			cut := clock.Add(-ttl)
			for side := range held {
				for row, h := range held[side] {
					if h.touched.UnixMilli() < cut.UnixMilli() {
						delete(held[side], row)
					}
				}
			}
			r.Must(r.Op.Tick(context.Background(), clock, r.C))
			ticks++
		}
		if rng.IntN(10) == 0 {
			r.Restart(nil)
			r.Op.now = now
		}
		if !maps.Equal(got, want) {
			t.Fatalf("after step %d:\n got %v\nwant %v", step, got, want)
		}
	}
	if ticks == 0 {
		t.Fatal("no tick: the test does not test the TTL")
	}
}

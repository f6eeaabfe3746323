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

// TestTopNFirstRandom: deduplication keeping the first row by event time
// (TopNConfig.First) over random rows (ties of time, NULL times, keys
// coming back after their row went out, NULL keys, late rows) and
// watermarks. The
// reference keeps, per key, the earliest row so far (by time, NULL last,
// then arrival) and emits it when the watermark reaches its time, closing
// the key; a row behind the watermark is late. The operator's output must
// be Inserts only, equal to the reference's after each step, with the late
// rows counted; it is snapshotted and restored at random cut points. On the
// disk backend its cache is emptied after every batch, so that closed keys
// come from pebble and pending ones are loaded again each time.
func TestTopNFirstRandom(t *testing.T) {
	for _, backend := range []string{StateMemory, StateDisk} {
		t.Run(backend, func(t *testing.T) { topnFirstRandom(t, backend) })
	}
}

func topnFirstRandom(t *testing.T, backend string) {
	in := types.Schema{{Name: "k", Type: types.StringType}, {Name: "v", Type: types.Int64Type}, {Name: "ts", Type: types.TimestampType}}
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 17))
		cfg := TopNConfig{Partition: []int{0}, Order: []SortKeySpec{{Col: 2}}, Lo: 1, Hi: 1, Rank: rng.IntN(2) == 0, First: true,
			StateBackend: backend}
		if seed%5 == 0 {
			cfg.Partition = nil
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			ctx := context.Background()
			out := slices.Clone(in)
			if cfg.Rank {
				out = append(out, types.Field{Name: "rn", Type: types.Int64Type})
			}
			tc := testkit.TaskContext(mem)
			tc.Metrics = &exec.TaskMetrics{}
			if backend == StateDisk {
				tc.StateFiles, tc.StateMemory, tc.SpillDir = stateTestFiles(t), 4<<20, t.TempDir()
			}
			open := func() exec.Operator {
				op := opTestNew(t, "topn", cfg, out)
				if err := op.Open(ctx, tc); err != nil {
					t.Fatal(err)
				}
				if d := op.(*topnOp).disk; (d != nil) != (backend == StateDisk) {
					t.Fatalf("backend %s, disk state %v", backend, d != nil)
				} else if d != nil {
					d.limit = 0 // emptied after every batch
				}
				return op
			}
			op := open()
			defer func() { op.Close(ctx) }()
			type row struct {
				k   string
				v   int
				ts  int // seconds, -1 for NULL
				seq int
			}
			obj := func(r row) string {
				ts := "null"
				if r.ts >= 0 {
					ts = fmt.Sprintf(`"1970-01-01 00:00:%02d"`, r.ts)
				}
				k := `"` + r.k + `"`
				if r.k == "" {
					k = "null"
				}
				s := fmt.Sprintf(`{"k": %s, "v": %d, "ts": %s`, k, r.v, ts)
				if cfg.Rank {
					s += `, "rn": 1`
				}
				return s + "}"
			}
			key := func(r row) string {
				if cfg.Partition == nil {
					return ""
				}
				return r.k
			}
			before := func(a, b row) bool { // a comes first
				switch {
				case a.ts != b.ts && a.ts < 0:
					return false
				case a.ts != b.ts && b.ts < 0:
					return true
				case a.ts != b.ts:
					return a.ts < b.ts
				}
				return a.seq < b.seq
			}
			cand := map[string]row{}
			closed := map[string]bool{}
			var want []string
			mark, seq := -1, 0 // the watermark in seconds; -1 before the first
			var late int64
			c := &testkit.Collector{T: t}
			check := func(what string) {
				t.Helper()
				for _, r := range c.Rows {
					if strings.HasPrefix(r, "delete") || strings.HasPrefix(r, "update") {
						t.Fatalf("%s: a retraction %s", what, r)
					}
				}
				testkit.Equal(t, what, c.Sorted(), topnRows(t, out, want))
				if n := tc.Metrics.LateRows.Load(); n != late {
					t.Errorf("%s: %d late rows, want %d", what, n, late)
				}
			}
			for step := range 5 + rng.IntN(30) {
				if rng.IntN(3) == 0 {
					m := mark + rng.IntN(6)
					if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.Watermark, Watermark: int64(m) * 1e6}, c); err != nil {
						t.Fatal(err)
					}
					if m > mark {
						mark = m
						for k, r := range cand {
							if r.ts >= 0 && r.ts <= mark {
								want = append(want, obj(r))
								closed[k] = true
								delete(cand, k)
							}
						}
					}
				} else {
					var objs []string
					for range 1 + rng.IntN(8) {
						seq++
						r := row{k: string(rune('a' + rng.IntN(4))), v: rng.IntN(3), ts: rng.IntN(30), seq: seq}
						if rng.IntN(6) == 0 {
							r.k = "" // NULL, a partition of its own
						}
						if rng.IntN(8) == 0 {
							r.ts = -1
						}
						objs = append(objs, obj(row{k: r.k, v: r.v, ts: r.ts}))
						switch k := key(r); {
						case closed[k]:
						case r.ts >= 0 && r.ts <= mark:
							late++
						default:
							if old, ok := cand[k]; !ok || before(r, old) {
								cand[k] = r
							}
						}
					}
					b := testkit.Batches(t, mem, in, "["+strings.Join(objs, ",")+"]")[0]
					err := op.ProcessBatch(ctx, 0, b, c)
					b.Rec.Release()
					if err != nil {
						t.Fatal(err)
					}
				}
				check(fmt.Sprintf("after step %d", step))
				if rng.IntN(4) == 0 {
					snap, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(step+1))
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
			if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
				t.Fatal(err)
			}
			for _, r := range cand {
				want = append(want, obj(r))
			}
			check("at the end")
		})
	}
}

package operators

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestHashAggUpdatesMinMaxRetract: min and max over inserts and deletes
// (AggSpec.Retract), the changes emitted applied in order, hold after each
// flush the min and max of each group's rows then held, computed here from
// those rows; at some flushes the operator is snapshotted and a new one
// restored from it carries on.
func TestHashAggUpdatesMinMaxRetract(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := context.Background()
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewPCG(seed, 4))
			aggs := []AggSpec{
				{Func: "min", Arg: 2, Type: types.Int64Type, Retract: true},
				{Func: "max", Arg: 2, Type: types.Int64Type, Retract: true},
				{Func: "max", Arg: 0, Type: types.StringType, Retract: true},
			}
			cfg := HashAggConfig{GroupBy: []int{1}, Aggs: aggs, Emit: AggEmitUpdates}
			out := aggTestOut(types.Int64Type, types.Int64Type, types.Int64Type, types.StringType)
			open := func() exec.Operator {
				op := opTestNew(t, "hash_agg", cfg, out)
				if err := op.Open(ctx, testkit.TaskContext(mem)); err != nil {
					t.Fatal(err)
				}
				return op
			}
			op := open()
			defer func() { op.Close(ctx) }()
			type row struct {
				k    string
				g, x int64
			}
			held := map[row]int{}
			got := map[string]int{}
			for step := range 150 {
				var objs []string
				var ops []exec.ChangeKind
				for range 1 + rng.IntN(6) {
					var r row
					op := exec.Insert
					if len(held) > 0 && rng.IntN(2) == 0 {
						rows := slices.SortedFunc(maps.Keys(held), func(a, b row) int {
							return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
						})
						r = rows[rng.IntN(len(rows))]
						op = exec.Delete
						if held[r]--; held[r] == 0 {
							delete(held, r)
						}
					} else {
						r = row{k: string(rune('a' + rng.IntN(5))), g: int64(rng.IntN(3)), x: int64(rng.IntN(8))}
						held[r]++
					}
					objs = append(objs, fmt.Sprintf(`{"k": %q, "g": %d, "x": %d}`, r.k, r.g, r.x))
					ops = append(ops, op)
				}
				rec := testkit.Record(t, mem, aggTestIn, "["+strings.Join(objs, ",")+"]")
				c := &testkit.Collector{T: t}
				err := op.ProcessBatch(ctx, 0, exec.Batch{Rec: rec, Ops: ops}, c)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
				if rng.IntN(3) > 0 {
					continue
				}
				if err := op.(exec.Flusher).Flush(ctx, c); err != nil {
					t.Fatal(err)
				}
				for _, r := range c.Rows {
					kind, vals, ok := strings.Cut(r, " ")
					if !ok {
						vals, kind = r, "insert"
					}
					switch kind {
					case "insert", "update_after":
						got[vals]++
					default:
						if got[vals] == 0 {
							t.Fatalf("%s of a row not emitted: %s", kind, vals)
						}
						if got[vals]--; got[vals] == 0 {
							delete(got, vals)
						}
					}
				}
				want := map[string]int{}
				for g := range int64(3) {
					var mn, mx int64
					var mk string
					n := 0
					for r := range held {
						if r.g != g {
							continue
						}
						if n == 0 || r.x < mn {
							mn = r.x
						}
						if n == 0 || r.x > mx {
							mx = r.x
						}
						if n == 0 || r.k > mk {
							mk = r.k
						}
						n++
					}
					if n > 0 {
						want[fmt.Sprintf(`[%d,%d,%d,%q]`, g, mn, mx, mk)] = 1
					}
				}
				if !maps.Equal(got, want) {
					t.Fatalf("step %d: got %v, want %v", step, got, want)
				}
				if rng.IntN(3) == 0 {
					data, err := op.(exec.Checkpointed).SnapshotState(ctx, int64(step))
					if err != nil {
						t.Fatal(err)
					}
					op.Close(ctx)
					op = open()
					if err := op.(exec.Checkpointed).RestoreState(ctx, data); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

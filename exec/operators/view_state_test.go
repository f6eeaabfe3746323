package operators

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/types"
)

// TestViewStateSnapshotState: a view restored from a snapshot holds the same
// rows, takes the same further changes (retractions of restored rows
// included) and ends as the view that took everything; damaged or foreign
// blobs are errors that leave a view as it was.
func TestViewStateSnapshotState(t *testing.T) {
	schemas := map[string]types.Schema{
		// One text column: the raw key path.
		"text": {{Name: "word", Type: types.StringType}},
		"mixed": {{Name: "word", Type: types.StringType}, {Name: "n", Type: types.Int64Type},
			{Name: "d", Type: types.DecimalType(10, 2)}, {Name: "b", Type: types.BoolType}},
	}
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(20) {
				viewStateOne(t, schema, rand.New(rand.NewPCG(seed, 11)))
				if t.Failed() {
					t.Fatalf("seed %d", seed)
				}
			}
		})
	}
}

func viewStateOne(t *testing.T, schema types.Schema, rng *rand.Rand) {
	ctx := context.Background()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	row := func() string {
		w := "null"
		if rng.IntN(6) > 0 {
			w = fmt.Sprintf("%q", []string{"a", "b", "", "a word longer than sixteen bytes"}[rng.IntN(4)])
		}
		if len(schema) == 1 {
			return fmt.Sprintf(`{"word": %s}`, w)
		}
		n := []string{"null", "1", "-7"}[rng.IntN(3)]
		d := []string{"null", `"1.50"`, `"-0.25"`}[rng.IntN(3)]
		b := []string{"null", "true", "false"}[rng.IntN(3)]
		return fmt.Sprintf(`{"word": %s, "n": %s, "d": %s, "b": %s}`, w, n, d, b)
	}
	// Batches of inserts and of retractions of rows held.
	var held []string
	var batches []exec.Batch
	for range 2 + rng.IntN(6) {
		var rows []string
		var ops []exec.ChangeKind
		for range 1 + rng.IntN(20) {
			if len(held) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(held))
				rows = append(rows, held[i])
				held = slices.Delete(held, i, i+1)
				ops = append(ops, []exec.ChangeKind{exec.Delete, exec.UpdateBefore}[rng.IntN(2)])
				continue
			}
			r := row()
			rows = append(rows, r)
			held = append(held, r)
			ops = append(ops, []exec.ChangeKind{exec.Insert, exec.UpdateAfter}[rng.IntN(2)])
		}
		b := testkit.Batches(t, mem, schema, "["+strings.Join(rows, ",")+"]")[0]
		b.Ops = ops
		batches = append(batches, b)
	}
	defer testkit.Release(batches)
	cut := rng.IntN(len(batches) + 1)

	send := func(v *ViewState, bs []exec.Batch) {
		t.Helper()
		for _, b := range bs {
			if err := v.Send(ctx, "job", b); err != nil {
				t.Fatal(err)
			}
		}
	}
	rowsOf := func(v *ViewState) []string {
		t.Helper()
		data, err := v.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return viewTestRows(t, data)
	}
	a, ref := NewViewState(schema), NewViewState(schema)
	send(a, batches[:cut])
	snap, err := a.snapshotState(mem)
	if err != nil {
		t.Fatal(err)
	}
	b := NewViewState(schema)
	// Rows it held before are replaced.
	send(b, batches[:1])
	if err := b.restoreState(mem, snap); err != nil {
		t.Fatal(err)
	}
	testkit.Equal(t, "restored rows", rowsOf(b), rowsOf(a))
	if b.Rows() != a.Rows() {
		t.Errorf("restored Rows() = %d, want %d", b.Rows(), a.Rows())
	}

	// Bad blobs leave b as it is.
	textView := NewViewState(types.Schema{{Name: "other", Type: types.StringType}})
	other, err := textView.snapshotState(mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(schema) == 1 {
		other, err = NewViewState(types.Schema{{Name: "n", Type: types.Int64Type}}).snapshotState(mem)
		if err != nil {
			t.Fatal(err)
		}
	}
	flipped := slices.Clone(snap)
	flipped[len(flipped)-1-rng.IntN(len(flipped)-state.EnvelopeLen)] ^= 0x10
	for what, blob := range map[string][]byte{
		"truncated":    snap[:rng.IntN(len(snap))],
		"flipped":      flipped,
		"other schema": other,
		"garbage":      []byte("HVEW garbage"),
		"hash_agg":     state.Encode(hashAggStateMagic, hashAggStateVersion, []byte("{}")),
	} {
		if err := b.restoreState(mem, blob); !errors.Is(err, state.ErrBadState) {
			t.Errorf("%s: err = %v, want a bad state", what, err)
		}
	}

	send(a, batches[cut:])
	send(b, batches[cut:])
	send(ref, batches)
	want := rowsOf(ref)
	testkit.Equal(t, "the view snapshotted, at the end", rowsOf(a), want)
	testkit.Equal(t, "the restored view, at the end", rowsOf(b), want)
	if b.Rows() != ref.Rows() {
		t.Errorf("Rows() = %d, want %d", b.Rows(), ref.Rows())
	}
}

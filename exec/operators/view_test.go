package operators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// viewTestRows reads a snapshot back as sorted text rows.
func viewTestRows(t *testing.T, data []byte) []string {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	rows := []string{}
	for r.Next() {
		rows = append(rows, testkit.Rows(exec.Batch{Rec: r.RecordBatch()})...)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	return rows
}

func TestViewState(t *testing.T) {
	ctx := context.Background()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	for _, schema := range []types.Schema{
		{{Name: "word", Type: types.StringType}, {Name: "n", Type: types.Int64Type}},
		{{Name: "word", Type: types.StringType}},
	} {
		t.Run(fmt.Sprint(len(schema)), func(t *testing.T) {
			v := NewViewState(schema)
			one := len(schema) == 1
			row := func(w string, n int) string {
				if one {
					return fmt.Sprintf(`{"word": %q}`, w)
				}
				return fmt.Sprintf(`{"word": %q, "n": %d}`, w, n)
			}
			text := func(w string, n int) string {
				if one {
					return fmt.Sprintf(`[%q]`, w)
				}
				return fmt.Sprintf(`[%q,%d]`, w, n)
			}
			apply := func(ops []exec.ChangeKind, rows ...string) error {
				b := testkit.Batches(t, mem, schema, "["+strings.Join(rows, ",")+"]")[0]
				defer b.Rec.Release()
				b.Ops = ops
				return v.Send(ctx, "job", b)
			}
			if err := apply(nil, row("a", 1), row("b", 1), row("a", 1)); err != nil {
				t.Fatal(err)
			}
			if err := apply([]exec.ChangeKind{exec.UpdateBefore, exec.UpdateAfter, exec.Delete}, row("a", 1), row("a", 2), row("b", 1)); err != nil {
				t.Fatal(err)
			}
			data, err := v.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			testkit.Equal(t, "rows", viewTestRows(t, data), []string{text("a", 1), text("a", 2)})
			if v.Rows() != 2 {
				t.Errorf("Rows() = %d, want 2", v.Rows())
			}
			if err := apply([]exec.ChangeKind{exec.Delete}, row("zzz", 1)); err == nil {
				t.Error("retracting a row the view does not hold: no error")
			}

			// Many rows that come and go: the view compacts, and keeps the live ones.
			for i := range 20 {
				var rows []string
				for j := range 1000 {
					rows = append(rows, row(fmt.Sprint("w", i, "-", j), j))
				}
				if err := apply(nil, rows...); err != nil {
					t.Fatal(err)
				}
				ops := make([]exec.ChangeKind, len(rows))
				for j := range ops {
					ops[j] = exec.Delete
				}
				if err := apply(ops, rows...); err != nil {
					t.Fatal(err)
				}
			}
			if n := v.table.Len(); n > 10000 {
				t.Errorf("%d keys held for 2 live rows: no compaction", n)
			}
			data, err = v.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			testkit.Equal(t, "rows after churn", viewTestRows(t, data), []string{text("a", 1), text("a", 2)})

			// A snapshot source reads it back, projected: from the spec as
			// planned (in this process), and from the spec as a remote
			// TaskManager gets it, through JSON.
			spec := opTestSpec("snapshot", SnapshotConfig{Columns: []int{0}}, schema[:1])
			spec.Data = data
			enc, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			var remote exec.OperatorSpec
			if err := json.Unmarshal(enc, &remote); err != nil {
				t.Fatal(err)
			}
			for _, spec := range []exec.OperatorSpec{spec, remote} {
				src, err := newSnapshotSource(spec)
				if err != nil {
					t.Fatal(err)
				}
				if err := src.Open(ctx, testkit.TaskContext(mem)); err != nil {
					t.Fatal(err)
				}
				c := &testkit.Collector{T: t}
				if err := src.Run(ctx, c); err != nil {
					t.Fatal(err)
				}
				testkit.Equal(t, "snapshot source", c.Sorted(), []string{`["a"]`, `["a"]`})
			}
		})
	}
}

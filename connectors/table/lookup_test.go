package table

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// A scan under a filter on the primary key reads through the segments' key
// indexes and emits only the rows whose keys the filter allows, however the
// keys are spread over the segments (here each of three segments holds ids
// 1..300 in a random third, so value ranges prune nothing). The expected
// rows are counted off the ids by hand.
func TestKeyLookup(t *testing.T) {
	s, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Create("t1")
	ids := rand.New(rand.NewSource(1)).Perm(300)
	for part := 0; part < 3; part++ {
		var items []string
		for _, i := range ids[part*100 : part*100+100] {
			items = append(items, fmt.Sprintf("%d:r%d", i+1, i+1))
		}
		if err := insert(t, s, "t1", keyed, items...); err != nil {
			t.Fatal(err)
		}
		foldLog(t, s, "t1")
	}
	id := expr.Column(0, types.Int64Type, "id")
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	cmp := func(op string, a, b *expr.Expr) *expr.Expr { return expr.Call(op, types.BoolType, a, b) }
	and := func(a, b *expr.Expr) *expr.Expr { return expr.Call("and", types.BoolType, a, b) }
	null := expr.Literal(types.Value{Type: types.Int64Type, Null: true})
	ids1 := func(from, to int) []string {
		var want []string
		for i := from; i <= to; i++ {
			want = append(want, fmt.Sprintf("%d|r%d", i, i))
		}
		slices.Sort(want)
		return want
	}
	for _, c := range []struct {
		what    string
		f       *expr.Expr
		key     []int
		want    []string
		explain string
	}{
		{"id = 150", cmp("=", id, lit(150)), []int{0}, ids1(150, 150), "(primary-key lookup id in 150)"},
		{"id IN (9, 7, 8, 1000, NULL)", expr.Call("in", types.BoolType, id, lit(9), lit(7), lit(8), lit(1000), null), []int{0},
			ids1(7, 9), "(primary-key lookup id in 7, 8, 9, 1000)"},
		{"id BETWEEN 10 AND 19", and(cmp(">=", id, lit(10)), cmp("<=", id, lit(19))), []int{0}, ids1(10, 19), "(primary-key lookup id in 10..19)"},
		{"id > 295", cmp(">", id, lit(295)), []int{0}, ids1(296, 300), "(primary-key lookup id in 296..)"},
		{"5 >= id", cmp(">=", lit(5), id), []int{0}, ids1(1, 5), "(primary-key lookup id in ..5)"},
		{"id = 5 AND id = 6", and(cmp("=", id, lit(5)), cmp("=", id, lit(6))), []int{0}, nil, "(primary-key lookup: no key can match)"},
		{"id = 5 AND name = 'x' (every row of the lookup)", and(cmp("=", id, lit(5)), cmp("=", expr.Column(1, types.StringType, "name"), expr.Literal(types.StringValue("x")))),
			[]int{0}, ids1(5, 5), "(primary-key lookup id in 5)"},
		{"a table without a key: every row", cmp("=", id, lit(150)), nil, ids1(1, 300), ""},
	} {
		spec := exec.ConnectorSpec{Connector: Name, Schema: schema, Filter: c.f, Key: c.key}
		if got := Lookup(spec); got != c.explain {
			t.Errorf("%s: EXPLAIN says %q, want %q", c.what, got, c.explain)
		}
		for _, par := range []int{1, 2} {
			got := scanSpec(t, s, "t1", spec, par)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s, parallelism %d: read %d rows %q, want %q", c.what, par, len(got), got, c.want)
			}
		}
	}
	// Rows still in the log are read whole; the query's filter picks them.
	if err := insert(t, s, "t1", keyed, "1000:log", "1001:log"); err != nil {
		t.Fatal(err)
	}
	spec := exec.ConnectorSpec{Connector: Name, Schema: schema, Filter: cmp("=", id, lit(1000)), Key: []int{0}}
	equal(t, "a lookup with rows in the log", scanSpec(t, s, "t1", spec, 2), "1000|log", "1001|log")
	spec.Filter = cmp("=", id, lit(42))
	equal(t, "a lookup beside rows in the log", scanSpec(t, s, "t1", spec, 1), "1000|log", "1001|log", "42|r42")
}

// scanSpec reads table id through the source of spec (its URL pinned) as
// parallelism subtasks would, and returns the rows sorted.
func scanSpec(t *testing.T, s *Store, id string, spec exec.ConnectorSpec, parallelism int) []string {
	t.Helper()
	p, err := s.Pin(id)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	spec.URL = p.URL
	reg := exec.NewRegistry()
	Register(reg)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	var got []string
	for i := 0; i < parallelism; i++ {
		src, err := reg.NewSource(spec)
		if err != nil {
			t.Fatal(err)
		}
		var c conntest.Collector
		if err := src.Open(context.Background(), conntest.TaskContext(t, mem, i, parallelism)); err != nil {
			t.Fatal(err)
		}
		if err := src.Run(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
		src.Close()
		got = append(got, c.Rows()...)
		c.Release()
	}
	slices.Sort(got)
	return got
}

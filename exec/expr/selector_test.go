package expr

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestMatchSelector: which conjuncts become selectors besides bounds.
func TestMatchSelector(t *testing.T) {
	x, y, s := col(0, tInt), col(1, tInt), col(2, tStr)
	c := func(op string, a ...*Expr) *Expr { return Call(op, tBool, a...) }
	many := []*Expr{s}
	for i := range smallInList + 1 {
		many = append(many, lStr(fmt.Sprint(i)))
	}
	for _, tc := range []struct {
		name string
		e    *Expr
		ok   bool
	}{
		{"x < y", c("<", x, y), true},
		{"x <> y", c("<>", x, y), true},
		{"x < y of a double", c("<", col(3, tF), col(4, tF)), false},
		{"x + 1 < y", c("<", fn("+", x, lInt(1)), y), false},
		{"s = 'a'", c("=", s, lStr("a")), true},
		{"s IN ('a', NULL)", c("in", s, lStr("a"), lNullT(tStr)), true},
		{"s <> 'a'", c("<>", s, lStr("a")), false},
		{"s IN (a column)", c("in", s, col(5, tStr)), false},
		{"s IN (too many)", c("in", many...), false},
		{"x IN (1, 2)", c("in", x, lInt(1), lInt(2)), false},
		{"x < 1 OR (s = 'a' AND x > y)", c("or", c("<", x, lInt(1)), c("and", c("=", s, lStr("a")), c(">", x, y))), true},
		{"x < 1 OR s <> 'a'", c("or", c("<", x, lInt(1)), c("<>", s, lStr("a"))), false},
		{"x < 1 OR (s = 'a' AND s <> 'b')", c("or", c("<", x, lInt(1)), c("and", c("=", s, lStr("a")), c("<>", s, lStr("b")))), false},
	} {
		if _, ok := MatchSelector(tc.e); ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

// TestSelectors checks the column comparisons and text IN lists, over
// columns with NULLs and an offset, against plain Go evaluation row by row.
func TestSelectors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(13, 14))
	const n = 500
	words := []string{"", "a", "AIR", "AIR REG", "REG AIR", "MAIL", "DELIVER IN PERSON", "DELIVER IN PERSOX", "12345678", "123456789"}
	xb, yb, sb := array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewStringBuilder(mem)
	defer xb.Release()
	defer yb.Release()
	defer sb.Release()
	type row struct {
		x, y   int64
		s      string
		xn, yn bool
		sn     bool
	}
	var rows []row
	for range n + 1 {
		w := row{x: int64(r.IntN(5)), y: int64(r.IntN(5)), s: words[r.IntN(len(words))],
			xn: r.IntN(8) == 0, yn: r.IntN(8) == 0, sn: r.IntN(8) == 0}
		rows = append(rows, w)
		if w.xn {
			xb.AppendNull()
		} else {
			xb.Append(w.x)
		}
		if w.yn {
			yb.AppendNull()
		} else {
			yb.Append(w.y)
		}
		if w.sn {
			sb.AppendNull()
		} else {
			sb.Append(w.s)
		}
	}
	xa0, ya0, sa0 := xb.NewArray(), yb.NewArray(), sb.NewArray()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec0 := array.NewRecordBatch(schema, []arrow.Array{xa0, ya0, sa0}, n+1)
	xa0.Release()
	ya0.Release()
	sa0.Release()
	defer rec0.Release()
	rec := rec0.NewSlice(1, n+1) // columns with an offset of 1
	defer rec.Release()
	rows = rows[1:]
	x, y, s := col(0, tInt), col(1, tInt), col(2, tStr)
	type check struct {
		e     *Expr
		holds func(w row) bool
	}
	var checks []check
	for op, h := range boundsOps {
		checks = append(checks, check{Call(op, tBool, x, y), func(w row) bool { return !w.xn && !w.yn && h(cmp.Compare(w.x, w.y)) }})
	}
	checks = append(checks, check{Call("<>", tBool, x, y), func(w row) bool { return !w.xn && !w.yn && w.x != w.y }})
	// Each of Refine's loops (one or two literals of a word, any of a word,
	// one of more words, any), then random lists.
	lists := [][]string{{"AIR"}, {"AIR", "AIR REG"}, {"AIR", "MAIL", "a"}, {"DELIVER IN PERSON"}, {"123456789"},
		{"DELIVER IN PERSON", "AIR"}, {""}}
	for range 30 {
		var l []string
		for range 1 + r.IntN(3) {
			l = append(l, words[r.IntN(len(words))])
		}
		lists = append(lists, l)
	}
	for _, lits := range lists {
		items := []*Expr{s}
		for _, w := range lits {
			items = append(items, lStr(w))
		}
		if r.IntN(4) == 0 {
			items = append(items, lNullT(tStr))
		}
		e := Call("in", tBool, items...)
		if len(items) == 2 {
			e = Call("=", tBool, s, items[1])
		}
		checks = append(checks, check{e, func(w row) bool {
			for _, l := range lits {
				if !w.sn && bytes.Equal([]byte(w.s), []byte(l)) {
					return true
				}
			}
			return false
		}})
	}
	// ORs: of a bounds, an AND of a comparison and a text IN, and a text
	// equality; of ANDs alone; nested.
	and, or := func(a ...*Expr) *Expr { return Call("and", tBool, a...) }, func(a ...*Expr) *Expr { return Call("or", tBool, a...) }
	isS := func(w row, l string) bool { return !w.sn && w.s == l }
	checks = append(checks,
		check{or(Call("=", tBool, x, lInt(3)), and(Call("<", tBool, x, y), Call("in", tBool, s, lStr("AIR"), lStr("MAIL"))), Call("=", tBool, s, lStr("a"))),
			func(w row) bool {
				return !w.xn && w.x == 3 || !w.xn && !w.yn && w.x < w.y && (isS(w, "AIR") || isS(w, "MAIL")) || isS(w, "a")
			}},
		check{or(and(Call(">=", tBool, x, lInt(1)), Call("<=", tBool, x, lInt(2))), and(Call(">=", tBool, y, lInt(4)), Call("=", tBool, s, lStr("")))),
			func(w row) bool { return !w.xn && w.x >= 1 && w.x <= 2 || !w.yn && w.y >= 4 && isS(w, "") }},
		check{or(Call("=", tBool, y, lInt(0)), or(Call("=", tBool, x, lInt(0)), Call("=", tBool, s, lStr("MAIL")))),
			func(w row) bool { return !w.yn && w.y == 0 || !w.xn && w.x == 0 || isS(w, "MAIL") }})
	for _, c := range checks {
		sl, ok := MatchSelector(c.e)
		if !ok || !sl.Reads(schema) {
			t.Fatalf("%s: no selector", c.e)
		}
		var want, sub, wantSub []int32
		for i, w := range rows {
			pick := r.IntN(3) > 0
			if pick {
				sub = append(sub, int32(i))
			}
			if c.holds(w) {
				want = append(want, int32(i))
				if pick {
					wantSub = append(wantSub, int32(i))
				}
			}
		}
		if len(want) == 0 || len(want) == n {
			t.Fatalf("%s: a check that cannot tell: %d of %d rows kept", c.e, len(want), n)
		}
		if got := sl.SelectAll(rec, []int32{-1}); fmt.Sprint(got) != fmt.Sprint(append([]int32{-1}, want...)) {
			t.Fatalf("%s: SelectAll %v, want %v", c.e, got[1:], want)
		}
		if got := sl.Refine(rec, sub); fmt.Sprint(got) != fmt.Sprint(wantSub) {
			t.Fatalf("%s: Refine %v, want %v", c.e, got, wantSub)
		}
	}
}

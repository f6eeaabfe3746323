package expr

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bind replaces column references by row i's values, giving the constant
// expression that row-at-a-time evaluation would see.
func bind(e *Expr, b arrow.RecordBatch, i int) *Expr {
	if e.Kind == KindColumn {
		v := ValueOf(b.Column(e.Col), i)
		v.Type = e.Type
		return &Expr{Kind: KindLiteral, Type: e.Type, Value: v}
	}
	c := *e
	c.Args = make([]*Expr, len(e.Args))
	for k, a := range e.Args {
		c.Args[k] = bind(a, b, i)
	}
	return &c
}

// randomJSON makes n values from gen, about one in five NULL.
func randomJSON(r *rand.Rand, n int, gen func() string) string {
	parts := make([]string, n)
	for i := range parts {
		if r.IntN(5) == 0 {
			parts[i] = "null"
		} else {
			parts[i] = gen()
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Whole-batch evaluation agrees with evaluating each row on its own, over
// batches long enough to cross bitmap bytes and words, and over a slice whose
// offset is not a multiple of 8.
func TestBatchMatchesRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 150
	words := []string{"apple", "Banana", "cherry", "", "ÉCLAIR", "date", "apple pie", "a_b", "100%"}
	cols := []column{
		ints(randomJSON(r, n, func() string { return fmt.Sprint(r.IntN(21) - 10) })),
		ints(randomJSON(r, n, func() string { return fmt.Sprint(r.IntN(9) + 1) })),
		floats(randomJSON(r, n, func() string { return fmt.Sprint(r.Float64()*20 - 10) })),
		decs(6, 2, randomJSON(r, n, func() string { return fmt.Sprintf(`"%.2f"`, r.Float64()*200-100) })),
		strs(randomJSON(r, n, func() string { return fmt.Sprintf("%q", words[r.IntN(len(words))]) })),
		bools(randomJSON(r, n, func() string { return fmt.Sprint(r.IntN(2) == 0) })),
		tss(randomJSON(r, n, func() string { return fmt.Sprintf(`"2020-01-%02d 12:00:00"`, r.IntN(28)+1) })),
	}
	i0, i1, f, d, s, bl, ts := col(0, tInt), col(1, tInt), col(2, tF), col(3, dec(6, 2)), col(4, tStr), col(5, tBool), col(6, tTS)
	exprs := []*Expr{
		fn("+", i0, i1), fn("*", i0, i1), fn("/", i0, i1), fn("%", i0, i1), fn("-", f, i0),
		fn("/", d, i1), fn("*", d, f), fn("+", d, i0), fn("round", d, i1), fn("floor", d), fn("round", f),
		fn("=", i0, i1), fn("<", f, d), fn(">=", s, lStr("b")), fn("<>", bl, lBool(true)), fn(">", ts, lStr("2020-01-15")),
		fn("and", bl, fn(">", i0, lInt(0))), fn("or", bl, fn("<", f, lF(0))), fn("not", bl), fn("is_true", bl), fn("is_null", s),
		fn("in", i0, lInt(1), lInt(2), i1), fn("in", s, lStr("apple"), lStr("")),
		fn("case", bl, s, fn(">", i0, lInt(0)), lStr("pos"), lNull()),
		fn("coalesce", s, fn("upper", s), lStr("none")), fn("nullif", i0, i1),
		fn("like", s, lStr("%a%"), lStr(`\`)), fn("ilike", s, lStr("_a%"), lStr(`\`)), fn("like", s, lStr(`%\%`), lStr(`\`)),
		fn("lower", s), fn("upper", s), fn("length", s), fn("substring", s, i0, i1), fn("concat", s, cast(i0, tStr)),
		fn("||", s, cast(d, tStr)), fn("trim", s, lStr("ae")), fn("replace", s, lStr("a"), lStr("AA")),
		fn("strpos", s, lStr("a")), fn("left", s, i0), fn("right", s, i0), fn("reverse", s),
		cast(f, tInt), cast(d, tInt), cast(f, dec(6, 2)), cast(i0, dec(6, 2)), cast(d, tF), cast(f, tStr), cast(ts, tStr),
		fn("||", lStr("x"), s), fn("like", lStr("apple"), s, lStr(`\`)), fn("substring", lStr("hello"), i0, lNullT(tInt)),
		fn("substring", lStr("hello"), i0, i1), fn("left", lStr("héllo"), i0), fn("-", lInt(3), i0), fn("/", lDec("1.5", 2, 1), d),
		fn("<", lF(0), f), fn("=", lBool(true), bl), fn("+", i0, lNullT(tInt)), fn("round", lDec("2.5", 2, 1), i0),
		fn("concat", lStr("a"), lNullT(tStr), s), fn("replace", lStr("banana"), lStr("a"), s), fn("strpos", lStr("apple pie"), s),
		cast(cast(d, tStr), dec(7, 1)), cast(cast(i0, tStr), tInt), cast(cast(ts, tStr), tTS), cast(cast(bl, tStr), tBool),
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := makeBatch(t, mem, cols...)
	defer b.Release()
	sub := b.NewSlice(5, n)
	defer sub.Release()
	for _, e := range exprs {
		for _, batch := range []arrow.RecordBatch{b, sub} {
			got, err := Eval(e, batch, mem)
			if err != nil {
				t.Errorf("%s: %v", e, err)
				continue
			}
			for i := range int(batch.NumRows()) {
				want, err := EvalConst(bind(e, batch, i))
				if err != nil {
					t.Errorf("%s row %d alone: %v", e, i, err)
					break
				}
				if g := FormatValue(ValueOf(got, i)); g != FormatValue(want) {
					t.Errorf("%s row %d: batch gives %s, row alone %s", e, i, g, FormatValue(want))
					break
				}
			}
			got.Release()
		}
	}
}

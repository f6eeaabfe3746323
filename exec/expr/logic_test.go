package expr

import "testing"

func TestLogic(t *testing.T) {
	// Every pair of the three truth values.
	a := bools(`[true, true, true, false, false, false, null, null, null]`)
	b := bools(`[true, false, null, true, false, null, true, false, null]`)
	x, y := col(0, tBool), col(1, tBool)
	runEvalTests(t, []evalTest{
		{name: "and", e: fn("and", x, y), cols: []column{a, b}, want: []string{"TRUE", "FALSE", "NULL", "FALSE", "FALSE", "FALSE", "NULL", "FALSE", "NULL"}},
		{name: "or", e: fn("or", x, y), cols: []column{a, b}, want: []string{"TRUE", "TRUE", "TRUE", "TRUE", "FALSE", "NULL", "TRUE", "NULL", "NULL"}},
		{name: "and three", e: fn("and", x, y, lBool(true)), cols: []column{a, b}, want: []string{"TRUE", "FALSE", "NULL", "FALSE", "FALSE", "FALSE", "NULL", "FALSE", "NULL"}},
		{name: "or null literal", e: fn("or", x, lNull()), cols: []column{a}, want: []string{"TRUE", "TRUE", "TRUE", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"}},
		{name: "not", e: fn("not", x), cols: []column{bools(`[true, false, null]`)}, want: []string{"FALSE", "TRUE", "NULL"}},
		{name: "is true", e: fn("is_true", x), cols: []column{bools(`[true, false, null]`)}, want: []string{"TRUE", "FALSE", "FALSE"}},
		{name: "is false", e: fn("is_false", x), cols: []column{bools(`[true, false, null]`)}, want: []string{"FALSE", "TRUE", "FALSE"}},
		{name: "is not true", e: fn("is_not_true", x), cols: []column{bools(`[true, false, null]`)}, want: []string{"FALSE", "TRUE", "TRUE"}},
		{name: "is not false", e: fn("is_not_false", x), cols: []column{bools(`[true, false, null]`)}, want: []string{"TRUE", "FALSE", "TRUE"}},
		{name: "is null", e: fn("is_null", col(0, tStr)), cols: []column{strs(`["a", null, ""]`)}, want: []string{"FALSE", "TRUE", "FALSE"}},
		{name: "is not null", e: fn("is_not_null", col(0, tInt)), cols: []column{ints(`[1, null, 3]`)}, want: []string{"TRUE", "FALSE", "TRUE"}},
		{name: "is null of NULL", e: fn("is_null", lNull()), cols: []column{ints(`[1, 2, 3]`)}, want: []string{"TRUE", "TRUE", "TRUE"}},
		{name: "is null no nulls", e: fn("is_null", col(0, tInt)), cols: []column{ints(`[1, 2, 3]`)}, want: []string{"FALSE", "FALSE", "FALSE"}},

		// x <> 0 AND 10 / x > 1: the division never sees x = 0.
		{name: "and guards division", e: fn("and", fn("<>", col(0, tInt), lInt(0)), fn(">", fn("/", lInt(10), col(0, tInt)), lInt(1))),
			cols: []column{ints(`[0, 5, 20, null]`)}, want: []string{"FALSE", "TRUE", "FALSE", "NULL"}},
		{name: "or guards division", e: fn("or", fn("=", col(0, tInt), lInt(0)), fn(">", fn("/", lInt(10), col(0, tInt)), lInt(1))),
			cols: []column{ints(`[0, 5, 20]`)}, want: []string{"TRUE", "TRUE", "FALSE"}},
		{name: "and still fails on used rows", e: fn("and", fn("<>", col(0, tInt), lInt(1)), fn(">", fn("/", lInt(10), col(0, tInt)), lInt(1))),
			cols: []column{ints(`[0, 5]`)}, err: "division by zero"},
	})
}

func TestConditional(t *testing.T) {
	x := col(0, tInt)
	sign := fn("case",
		fn(">", x, lInt(0)), lStr("pos"),
		fn("<", x, lInt(0)), lStr("neg"),
		lStr("zero or null"))
	runEvalTests(t, []evalTest{
		{name: "case", e: sign, cols: []column{ints(`[5, -5, 0, null]`)}, want: []string{"'pos'", "'neg'", "'zero or null'", "'zero or null'"}},
		{name: "case first match wins", e: fn("case", fn(">", x, lInt(0)), lInt(1), fn(">", x, lInt(2)), lInt(2), lNull()),
			cols: []column{ints(`[5, -5, 3]`)}, want: []string{"1", "NULL", "1"}},
		{name: "case coerces", e: fn("case", fn(">", x, lInt(0)), x, lDec("0.5", 2, 1)),
			cols: []column{ints(`[5, -5, 3]`)}, want: []string{"5.0", "0.5", "3.0"}},
		{name: "case guards division", e: fn("case", fn("=", x, lInt(0)), lNull(), fn("/", lInt(10), x)),
			cols: []column{ints(`[0, 5, null, 2]`)}, want: []string{"NULL", "2", "NULL", "5"}},
		{name: "case when guards division", e: fn("case", fn("=", x, lInt(0)), lInt(-1), fn(">", fn("/", lInt(10), x), lInt(3)), lInt(1), lInt(0)),
			cols: []column{ints(`[0, 5, 2, 0]`)}, want: []string{"-1", "0", "1", "-1"}},
		{name: "case unguarded division fails", e: fn("case", fn("=", x, lInt(1)), lNull(), fn("/", lInt(10), x)),
			cols: []column{ints(`[0, 5]`)}, err: "division by zero"},
		{name: "case strings from columns", e: fn("case", col(1, tBool), col(0, tStr), lStr("-")),
			cols: []column{strs(`["a", "bb", null, "dddd"]`), bools(`[true, false, true, null]`)}, want: []string{"'a'", "'-'", "NULL", "'-'"}},
		{name: "coalesce", e: fn("coalesce", col(0, tStr), col(1, tStr), lStr("z")),
			cols: []column{strs(`["a", null, null, "d"]`), strs(`["x", "b", null, null]`)}, want: []string{"'a'", "'b'", "'z'", "'d'"}},
		{name: "coalesce all null", e: fn("coalesce", col(0, tInt), lNull()),
			cols: []column{ints(`[1, null, 3]`)}, want: []string{"1", "NULL", "3"}},
		{name: "coalesce guards division", e: fn("coalesce", col(0, tInt), fn("/", lInt(10), col(1, tInt))),
			cols: []column{ints(`[1, null, 3]`), ints(`[0, 5, 0]`)}, want: []string{"1", "2", "3"}},
		{name: "nullif", e: fn("nullif", col(0, tInt), lInt(0)),
			cols: []column{ints(`[1, 0, null, 3]`)}, want: []string{"1", "NULL", "NULL", "3"}},
		{name: "nullif null second", e: fn("nullif", col(0, tInt), col(1, tInt)),
			cols: []column{ints(`[1, 2, 3]`), ints(`[null, 2, 4]`)}, want: []string{"1", "NULL", "3"}},
	})
}

func TestCompare(t *testing.T) {
	ops := []string{"=", "<>", "<", "<=", ">", ">="}
	type input struct {
		name string
		a, b column
		// want per operator, in the order of ops
		want [6][]string
	}
	T, F, N := "TRUE", "FALSE", "NULL"
	inputs := []input{
		{"int", ints(`[1, 2, 3, null]`), ints(`[2, 2, 2, 2]`), [6][]string{
			{F, T, F, N}, {T, F, T, N}, {T, F, F, N}, {T, T, F, N}, {F, F, T, N}, {F, T, T, N}}},
		{"float with NaN", floats(`[1, "NaN", "NaN", null]`), floats(`[2, "NaN", 1e308, 1]`), [6][]string{
			{F, T, F, N}, {T, F, T, N}, {T, F, F, N}, {T, T, F, N}, {F, F, T, N}, {F, T, T, N}}},
		{"decimal", decs(5, 2, `["1.00", "-2.50", "3.10", null]`), decs(5, 2, `["1.01", "-2.50", "-3.10", "0"]`), [6][]string{
			{F, T, F, N}, {T, F, T, N}, {T, F, F, N}, {T, T, F, N}, {F, F, T, N}, {F, T, T, N}}},
		{"text bytewise", strs(`["a", "b", "ab", null]`), strs(`["b", "b", "a", "a"]`), [6][]string{
			{F, T, F, N}, {T, F, T, N}, {T, F, F, N}, {T, T, F, N}, {F, F, T, N}, {F, T, T, N}}},
		{"bool", bools(`[false, true, true, null]`), bools(`[true, true, false, true]`), [6][]string{
			{F, T, F, N}, {T, F, T, N}, {T, F, F, N}, {T, T, F, N}, {F, F, T, N}, {F, T, T, N}}},
		{"timestamp", tss(`["2020-01-01 00:00:00", "2020-01-02 00:00:00", "2020-01-03 00:00:00", null]`), tss(`["2020-01-02 00:00:00", "2020-01-02 00:00:00", "2020-01-02 00:00:00", "2020-01-02 00:00:00"]`), [6][]string{
			{F, T, F, N}, {T, F, T, N}, {T, F, F, N}, {T, T, F, N}, {F, F, T, N}, {F, T, T, N}}},
	}
	var tests []evalTest
	for _, in := range inputs {
		for k, op := range ops {
			tests = append(tests, evalTest{name: in.name + " " + op, e: fn(op, col(0, in.a.t), col(1, in.b.t)), cols: []column{in.a, in.b}, want: in.want[k]})
		}
	}
	tests = append(tests,
		evalTest{name: "int vs decimal literal", e: fn("<", col(0, tInt), lDec("1.5", 2, 1)), cols: []column{ints(`[1, 2, null]`)}, want: []string{T, F, N}},
		evalTest{name: "timestamp vs text literal", e: fn(">=", col(0, tTS), lStr("2020-01-02")), cols: []column{tss(`["2020-01-01 23:59:59.999999", "2020-01-02 00:00:00", null]`)}, want: []string{F, T, N}},
		evalTest{name: "null = null", e: fn("=", lNull(), lNull()), want: []string{N}},
	)
	runEvalTests(t, tests)
}

func TestIn(t *testing.T) {
	x := col(0, tInt)
	T, F, N := "TRUE", "FALSE", "NULL"
	runEvalTests(t, []evalTest{
		{name: "int literals", e: fn("in", x, lInt(1), lInt(2)), cols: []column{ints(`[1, 3, null, 2]`)}, want: []string{T, F, N, T}},
		{name: "with NULL item", e: fn("in", x, lInt(1), lNull()), cols: []column{ints(`[1, 3, null, 2]`)}, want: []string{T, N, N, N}},
		{name: "column items", e: fn("in", x, col(1, tInt), lInt(5)), cols: []column{ints(`[1, 3, 5, 4]`), ints(`[1, null, 0, 0]`)}, want: []string{T, N, T, F}},
		{name: "text", e: fn("in", col(0, tStr), lStr("a"), lStr("b")), cols: []column{strs(`["a", "c", null, "b"]`)}, want: []string{T, F, N, T}},
		{name: "text of lengths apart", e: fn("in", col(0, tStr), lStr("AIR"), lStr("AIR REG"), lStr("")), cols: []column{strs(`["AIR", "AIRREG", "AIR REG", "", "RAIL", null, "AI"]`)}, want: []string{T, F, T, T, F, N, F}},
		{name: "text, more items than compared one by one", e: fn("in", col(0, tStr), lStr("a"), lStr("b"), lStr("c"), lStr("d"), lStr("e"), lStr("f"), lStr("g"), lStr("h"), lStr("ij")), cols: []column{strs(`["ij", "i", null, "h", "z"]`)}, want: []string{T, F, N, T, F}},
		{name: "decimal coerced", e: fn("in", x, lDec("1.0", 2, 1), lDec("2.5", 2, 1)), cols: []column{ints(`[1, 2, null, 3]`)}, want: []string{T, F, N, F}},
		{name: "double", e: fn("in", col(0, tF), lF(1.5), lInt(2)), cols: []column{floats(`[1.5, 2, 3, null]`)}, want: []string{T, T, F, N}},
		{name: "timestamp", e: fn("in", col(0, tTS), lTS("2020-01-02")), cols: []column{tss(`["2020-01-02 00:00:00", "2020-01-03 00:00:00", null]`)}, want: []string{T, F, N}},
	})
}

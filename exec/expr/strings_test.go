package expr

import "testing"

func TestStrings(t *testing.T) {
	s := col(0, tStr)
	words := strs(`["Hello", "ÀÉÎ straße", null, ""]`)
	runEvalTests(t, []evalTest{
		{name: "lower", e: fn("lower", s), cols: []column{words}, want: []string{"'hello'", "'àéî straße'", "NULL", "''"}},
		{name: "upper", e: fn("upper", s), cols: []column{words}, want: []string{"'HELLO'", "'ÀÉÎ STRAßE'", "NULL", "''"}},
		{name: "lower ascii", e: fn("lower", s), cols: []column{strs(`["ABC def", null, "X"]`)}, want: []string{"'abc def'", "NULL", "'x'"}},
		{name: "length", e: fn("length", s), cols: []column{strs(`["héllo", "abc", null, ""]`)}, want: []string{"5", "3", "NULL", "0"}},
		{name: "char_length ascii", e: fn("char_length", s), cols: []column{strs(`["hello", null, "ab"]`)}, want: []string{"5", "NULL", "2"}},
		{name: "octet_length", e: fn("octet_length", s), cols: []column{strs(`["héllo", "abc", null]`)}, want: []string{"6", "3", "NULL"}},

		{name: "substring from for", e: fn("substring", s, col(1, tInt), col(2, tInt)),
			cols: []column{strs(`["hello", "hello", "hello", "hello", "héllo", null, "hello"]`), ints(`[0, -1, 3, 10, 2, 1, 2]`), ints(`[3, 3, 100, 1, 2, 1, null]`)},
			want: []string{"'he'", "'h'", "'llo'", "''", "'él'", "NULL", "NULL"}},
		{name: "substring from", e: fn("substr", s, col(1, tInt)),
			cols: []column{strs(`["hello", "hello", "hello", "héllo"]`), ints(`[2, -5, 10, 2]`)},
			want: []string{"'ello'", "'hello'", "''", "'éllo'"}},
		{name: "substring negative length", e: fn("substring", s, lInt(1), lInt(-1)), cols: []column{strs(`["hello"]`)}, err: "negative substring length not allowed"},

		{name: "concat", e: fn("concat", s, lNull(), lStr("-"), cast(col(1, tInt), tStr)),
			cols: []column{strs(`["a", null, "c"]`), ints(`[1, 2, null]`)}, want: []string{"'a-1'", "'-2'", "'c-'"}},
		{name: "||", e: fn("||", s, col(1, tStr)),
			cols: []column{strs(`["a", null, "c", "d"]`), strs(`["b", "b", null, ""]`)}, want: []string{"'ab'", "NULL", "NULL", "'d'"}},
		{name: "|| with bigint", e: fn("||", s, cast(col(1, tInt), tStr)),
			cols: []column{strs(`["n=", "n="]`), ints(`[7, -1]`)}, want: []string{"'n=7'", "'n=-1'"}},

		{name: "trim", e: fn("trim", s), cols: []column{strs(`["  xx  ", "\txx ", null]`)}, want: []string{"'xx'", "'\txx'", "NULL"}},
		{name: "ltrim", e: fn("ltrim", s), cols: []column{strs(`["  xx  "]`)}, want: []string{"'xx  '"}},
		{name: "rtrim", e: fn("rtrim", s), cols: []column{strs(`["  xx  "]`)}, want: []string{"'  xx'"}},
		{name: "btrim set", e: fn("btrim", s, lStr("xé")), cols: []column{strs(`["xxaxx", "éaxé", "xx"]`)}, want: []string{"'a'", "'a'", "''"}},

		{name: "replace", e: fn("replace", s, lStr("b"), lStr("XY")), cols: []column{strs(`["abcabc", "", null]`)}, want: []string{"'aXYcaXYc'", "''", "NULL"}},
		{name: "replace empty from", e: fn("replace", s, lStr(""), lStr("x")), cols: []column{strs(`["abc"]`)}, want: []string{"'abc'"}},
		{name: "strpos", e: fn("strpos", s, col(1, tStr)),
			cols: []column{strs(`["héllo", "abc", "abc", null]`), strs(`["l", "", "z", "a"]`)}, want: []string{"3", "1", "0", "NULL"}},
		{name: "position", e: fn("position", lStr("l"), s), cols: []column{strs(`["hello", "abc"]`)}, want: []string{"3", "0"}},
		{name: "left", e: fn("left", s, col(1, tInt)),
			cols: []column{strs(`["héllo", "hello", "hi", "hi", null]`), ints(`[2, -2, 10, -10, 1]`)}, want: []string{"'hé'", "'hel'", "'hi'", "''", "NULL"}},
		{name: "right", e: fn("right", s, col(1, tInt)),
			cols: []column{strs(`["héllo", "hello", "hi", "hi"]`), ints(`[4, -2, 10, -10]`)}, want: []string{"'éllo'", "'llo'", "'hi'", "''"}},
		{name: "reverse", e: fn("reverse", s), cols: []column{strs(`["héllo", "", null]`)}, want: []string{"'olléh'", "''", "NULL"}},
	})
}

func TestLike(t *testing.T) {
	s, p := col(0, tStr), col(1, tStr)
	like := func(esc string) *Expr { return fn("like", s, p, lStr(esc)) }
	T, F, N := "TRUE", "FALSE", "NULL"
	runEvalTests(t, []evalTest{
		{name: "basics", e: like(`\`),
			cols: []column{
				strs(`["abc", "abc", "abc", "", "", "héllo", "abc", "mississippi", "aaa", "aa", null, "abc"]`),
				strs(`["a%", "_b_", "ABC", "%", "_", "h_llo", "abc", "%iss%ipp%", "%a%a%a%", "%a%a%a%", "%", null]`)},
			want: []string{T, T, F, T, F, T, T, T, T, F, N, N}},
		{name: "backslash escapes", e: like(`\`),
			cols: []column{strs(`["abc", "a%", "a%b", "axb", "a_b", "axb", "a\\b"]`), strs(`["a\\%", "a\\%", "a\\%b", "a\\%b", "a\\_b", "a\\_b", "a\\\\b"]`)},
			want: []string{F, T, T, F, T, F, T}},
		{name: "other escape", e: like("!"),
			cols: []column{strs(`["a_b", "axb", "a\\b"]`), strs(`["a!_b", "a!_b", "a\\b"]`)},
			want: []string{T, F, T}},
		{name: "no escape", e: like(""),
			cols: []column{strs(`["a\\b", "a\\b"]`), strs(`["a\\b", "a\\_"]`)},
			want: []string{T, T}},
		{name: "literal patterns", e: fn("like", s, lStr("%ab%"), lStr(`\`)),
			cols: []column{strs(`["xaby", "ab", "ba", null]`)}, want: []string{T, T, F, N}},
		{name: "suffix", e: fn("like", s, lStr("%ab"), lStr(`\`)),
			cols: []column{strs(`["xab", "abx"]`)}, want: []string{T, F}},
		{name: "ilike", e: fn("ilike", s, p, lStr(`\`)),
			cols: []column{strs(`["ABC", "Straße", "abc"]`), strs(`["a%c", "STRA_E", "x%"]`)}, want: []string{T, T, F}},
		{name: "not like", e: fn("not", like(`\`)),
			cols: []column{strs(`["abc", "xbc", null]`), strs(`["a%", "a%", "a%"]`)}, want: []string{F, T, N}},
		{name: "pattern ends with escape", e: like(`\`), cols: []column{strs(`["abcd"]`), strs(`["abc\\"]`)}, err: "LIKE pattern must not end with escape character"},
		{name: "long escape", e: like("ab"), cols: []column{strs(`["abc"]`), strs(`["abc"]`)}, err: "invalid escape string"},
	})
}

package planner

import (
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Moving a filter on the length of split pieces into the split: in
//
//	SELECT word ... FROM (SELECT unnest(string_split(line, ' ')) AS word ...) AS t
//	WHERE word <> '' AND length(word) > 3
//
// the unnest can drop the pieces those two conditions reject as it finds them
// (operators.UnnestConfig's MinBytes and MinChars) instead of writing every piece for
// the filter to evaluate and then copy the survivors. Only conditions on the
// pieces' column that say "at least n bytes or characters" move; the rest stay
// in the filter. Pieces are never NULL, so a condition that is NULL for a NULL
// piece needs no care.

// unnestLengthBounds splits cond, a filter over an unnest's output whose pieces
// are column col, into the minimum piece length in bytes and in characters its
// conjuncts demand, and the conjuncts that remain (nil when none does).
func unnestLengthBounds(cond *expr.Expr, col int) (minBytes, minChars int, rest *expr.Expr) {
	var kept []*expr.Expr
	for _, c := range conjuncts(cond) {
		bytes, chars, ok := pieceLengthBound(c, col)
		if !ok {
			kept = append(kept, c)
			continue
		}
		minBytes, minChars = max(minBytes, bytes), max(minChars, chars)
	}
	switch len(kept) {
	case 0:
		return minBytes, minChars, nil
	case 1:
		return minBytes, minChars, kept[0]
	}
	return minBytes, minChars, expr.Call("and", types.BoolType, kept...)
}

// conjuncts flattens the ANDs at the top of e.
func conjuncts(e *expr.Expr) []*expr.Expr {
	if e.Kind == expr.KindCall && e.Func == "and" {
		var out []*expr.Expr
		for _, a := range e.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []*expr.Expr{e}
}

// pieceLengthBound recognises col unequal to the empty string as at least one byte, and
// length(col) compared with an integer literal so that it means "at least n"
// (length and its synonyms count characters, octet_length bytes).
func pieceLengthBound(e *expr.Expr, col int) (minBytes, minChars int, ok bool) {
	if e.Kind != expr.KindCall || len(e.Args) != 2 {
		return 0, 0, false
	}
	l, r, op := e.Args[0], e.Args[1], e.Func
	if isLiteral(l) { // k < length(col) is length(col) > k
		l, r = r, l
		switch op {
		case "<":
			op = ">"
		case "<=":
			op = ">="
		case ">", ">=":
			return 0, 0, false
		}
	}
	if op == "<>" && isPieces(l, col) && isLiteral(r) && r.Type == types.StringType && r.Value.Str == "" {
		return 1, 0, true
	}
	if l.Kind != expr.KindCall || len(l.Args) != 1 || !isPieces(l.Args[0], col) ||
		!isLiteral(r) || r.Type.Base() != types.Int64Type {
		return 0, 0, false
	}
	k := r.Value.Int
	var n int64
	switch op {
	case ">":
		n = k + 1
	case ">=":
		n = k
	default:
		return 0, 0, false
	}
	if n < 0 || n > 1<<20 {
		return 0, 0, false // always true, or absurd: leave it to the filter
	}
	switch l.Func {
	case "length", "char_length", "character_length":
		return 0, int(n), true
	case "octet_length":
		return int(n), 0, true
	}
	return 0, 0, false
}

func isLiteral(e *expr.Expr) bool { return e.Kind == expr.KindLiteral && !e.Value.Null }

func isPieces(e *expr.Expr, col int) bool {
	return e.Kind == expr.KindColumn && e.Col == col && e.Type == types.StringType
}

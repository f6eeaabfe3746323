package sql

// The dialect layer's rewrite of PostgreSQL's grouping sets (dialect.go lists
// it): GROUP BY ROLLUP (...), CUBE (...) and GROUPING SETS (...), which the
// parser does not read, become GROUP BY over every expression they name, and
// the sets go to the binder as a fact.

import "strings"

// groupingSets is the fact of one GROUP BY: its sets, each the indexes of the
// flattened GROUP BY's items it groups by.
type groupingSets [][]int

// rewriteGroupingSets rewrites GROUP BY items among which is ROLLUP, CUBE or
// GROUPING SETS. Each item stands for a list of sets (a plain expression for
// one set of itself; ROLLUP (a, b) for (a, b), (a), (); CUBE (a, b) for every
// subset; GROUPING SETS (s, ...) for its sets), and the clause for their
// product, as in PostgreSQL. The fact is keyed by the offset of the first item
// of the flattened list; a GROUP BY that flattens to nothing (GROUPING SETS
// (())) is dropped, which groups everything once, as ().
func rewriteGroupingSets(stmt []token, f *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("GROUP") {
			continue
		}
		w := words(stmt[i:])
		if len(w) < 2 || !stmt[i+w[1]].is("BY") {
			continue
		}
		start := i + w[1] + 1
		end := groupByEnd(stmt, start)
		items := splitTopLevel(stmt, start, end)
		special := false
		for _, it := range items {
			special = special || groupingKind(stmt, it) != ""
		}
		if !special {
			continue
		}
		var flat [][]token // the distinct expressions, by their text
		index := func(toks []token) int {
			text := tokenText(toks)
			for k, e := range flat {
				if strings.EqualFold(tokenText(e), text) {
					return k
				}
			}
			flat = append(flat, toks)
			return len(flat) - 1
		}
		sets := [][]int{{}}
		ok := true
		for _, it := range items {
			itemSets, good := itemGroupingSets(stmt, it, index)
			if !good {
				ok = false
				break
			}
			var product [][]int
			for _, s := range sets {
				for _, t := range itemSets {
					product = append(product, append(append([]int{}, s...), t...))
				}
			}
			sets = product
		}
		if !ok {
			continue
		}
		if len(flat) == 0 {
			stmt = splice(stmt, i, end)
			continue
		}
		var with []token
		for k, e := range flat {
			if k > 0 {
				with = append(with, made(e[0].pos, ", ")...)
			}
			with = append(with, e...)
		}
		f.groupingSets[flat[0][0].pos] = sets
		with = append(made(stmt[start].pos, " "), with...)
		if end < len(stmt) {
			with = append(with, made(stmt[end-1].pos, " ")...)
		}
		stmt = splice(stmt, start, end, with...)
	}
	return stmt
}

// groupByEnd is where the GROUP BY items starting at start end: at the clause
// or set operation after them, a closing parenthesis or a semicolon.
func groupByEnd(stmt []token, start int) int {
	depth := 0
	for j := start; j < len(stmt); j++ {
		t := stmt[j]
		switch {
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			if depth == 0 {
				return j
			}
			depth--
		case depth == 0 && (t.text == ";" || t.is("HAVING") || t.is("ORDER") || t.is("LIMIT") || t.is("WINDOW") ||
			t.is("UNION") || t.is("INTERSECT") || t.is("EXCEPT") || t.is("WITH") || t.is("OFFSET") || t.is("FETCH")):
			return j
		}
	}
	return len(stmt)
}

// splitTopLevel splits stmt[from:to] at its top-level commas, each part
// without its surrounding blanks.
func splitTopLevel(stmt []token, from, to int) [][]token {
	var parts [][]token
	depth, start := 0, from
	for j := from; j < to; j++ {
		t := stmt[j]
		switch {
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		case depth == 0 && t.kind == tokPunct && t.text == ",":
			parts = append(parts, trimBlanks(stmt[start:j]))
			start = j + 1
		}
	}
	if p := trimBlanks(stmt[start:to]); len(p) > 0 || len(parts) > 0 {
		parts = append(parts, p)
	}
	return parts
}

// groupingKind says which grouping form an item is: "ROLLUP", "CUBE",
// "GROUPING SETS" or "" for an expression.
func groupingKind(stmt []token, it []token) string {
	w := words(it)
	switch {
	case len(w) >= 2 && (it[w[0]].is("ROLLUP") || it[w[0]].is("CUBE")) && it[w[1]].text == "(":
		return strings.ToUpper(it[w[0]].text)
	case len(w) >= 3 && it[w[0]].is("GROUPING") && it[w[1]].is("SETS") && it[w[2]].text == "(":
		return "GROUPING SETS"
	}
	return ""
}

// itemGroupingSets returns the sets one GROUP BY item stands for, as indexes
// that index gives its expressions.
func itemGroupingSets(stmt []token, it []token, index func([]token) int) ([][]int, bool) {
	kind := groupingKind(stmt, it)
	if kind == "" {
		return [][]int{{index(it)}}, true
	}
	w := words(it)
	open := w[1]
	if kind == "GROUPING SETS" {
		open = w[2]
	}
	closing := matchingParen(it, open)
	if closing < 0 || len(trimBlanks(it[closing+1:])) > 0 {
		return nil, false
	}
	// The elements: an expression, or a parenthesised list of them (one unit).
	var elems [][]int
	for _, e := range splitTopLevel(it, open+1, closing) {
		ew := words(e)
		if len(ew) > 0 && e[ew[0]].text == "(" && matchingParen(e, ew[0]) == len(e)-1 {
			var unit []int
			for _, x := range splitTopLevel(e, ew[0]+1, len(e)-1) {
				if len(x) == 0 {
					continue
				}
				if groupingKind(stmt, x) != "" {
					return nil, false // nested ROLLUP and the like: not supported
				}
				unit = append(unit, index(x))
			}
			elems = append(elems, unit)
			continue
		}
		if len(e) == 0 || groupingKind(stmt, e) != "" {
			return nil, false
		}
		elems = append(elems, []int{index(e)})
	}
	var sets [][]int
	switch kind {
	case "ROLLUP":
		for n := len(elems); n >= 0; n-- {
			var s []int
			for _, u := range elems[:n] {
				s = append(s, u...)
			}
			sets = append(sets, s)
		}
	case "CUBE":
		// Every subset, the largest first (PostgreSQL's order does not
		// matter to the result; rows come unordered without ORDER BY).
		for mask := (1 << len(elems)) - 1; mask >= 0; mask-- {
			var s []int
			for k, u := range elems {
				if mask&(1<<k) != 0 {
					s = append(s, u...)
				}
			}
			sets = append(sets, s)
		}
	default:
		sets = elems
	}
	return sets, true
}

// tokenText is the text of toks without their blanks, to compare expressions.
func tokenText(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		if t.kind != tokSpace {
			b.WriteString(t.text)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

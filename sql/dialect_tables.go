package sql

// The dialect layer's rewrites of table expressions (dialect.go lists them):
// VALUES lists and derived tables' column lists.

import (
	"fmt"
	"strings"
)

// rewriteValuesLists turns VALUES (a, b), (c, d), as a statement or a derived
// table (not INSERT's), into SELECT a AS column1, b AS column2 UNION ALL
// SELECT c, d; a derived table's column list, AS t (x, y), names the columns
// instead (and goes, as the parser reads no column list).
func rewriteValuesLists(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("VALUES") {
			continue
		}
		prev := i - 1
		for prev >= 0 && stmt[prev].kind == tokSpace {
			prev--
		}
		derived := prev >= 0 && stmt[prev].text == "("
		if prev >= 0 && !derived {
			continue // INSERT ... VALUES, or VALUES inside another form
		}
		// The rows: (...) groups separated by commas.
		var rows [][2]int // [open, close] of each row
		j := i + 1
		for {
			for j < len(stmt) && stmt[j].kind == tokSpace {
				j++
			}
			if j >= len(stmt) || stmt[j].text != "(" {
				break
			}
			closing := matchingParen(stmt, j)
			if closing < 0 {
				return stmt
			}
			rows = append(rows, [2]int{j, closing})
			j = closing + 1
			k := j
			for k < len(stmt) && stmt[k].kind == tokSpace {
				k++
			}
			if k < len(stmt) && stmt[k].text == "," {
				j = k + 1
				continue
			}
			break
		}
		if len(rows) == 0 {
			continue
		}
		end := rows[len(rows)-1][1] + 1
		// The column names: a derived table's list, else column1, column2...
		var names []string
		var listFrom, listTo int
		if derived {
			outer := matchingParen(stmt, prev)
			if outer < 0 {
				return stmt
			}
			w := words(stmt[outer+1:])
			k := 0
			if len(w) > k && stmt[outer+1+w[k]].is("AS") {
				k++
			}
			if len(w) > k+1 && (stmt[outer+1+w[k]].kind == tokWord || stmt[outer+1+w[k]].kind == tokIdent) && stmt[outer+1+w[k+1]].text == "(" {
				open := outer + 1 + w[k+1]
				closing := matchingParen(stmt, open)
				if closing < 0 {
					return stmt
				}
				for _, t := range stmt[open+1 : closing] {
					if t.kind == tokWord || t.kind == tokIdent {
						names = append(names, t.text)
					}
				}
				listFrom, listTo = open, closing+1
			}
		}
		var with []token
		for r, row := range rows {
			if r > 0 {
				with = append(with, made(stmt[row[0]].pos, " UNION ALL ")...)
			}
			with = append(with, made(stmt[row[0]].pos, "SELECT ")...)
			// The row's values, split at its top-level commas.
			depth, start := 0, row[0]+1
			col := 0
			emit := func(from, to int) {
				if col > 0 {
					with = append(with, made(stmt[from].pos, ", ")...)
				}
				with = append(with, trimBlanks(stmt[from:to])...)
				if r == 0 {
					name := fmt.Sprintf("column%d", col+1)
					if col < len(names) {
						name = names[col]
					}
					with = append(with, made(stmt[from].pos, " AS "+name)...)
				}
				col++
			}
			for k := row[0] + 1; k < row[1]; k++ {
				switch t := stmt[k]; {
				case t.kind == tokPunct && t.text == "(":
					depth++
				case t.kind == tokPunct && t.text == ")":
					depth--
				case depth == 0 && t.kind == tokPunct && t.text == ",":
					emit(start, k)
					start = k + 1
				}
			}
			emit(start, row[1])
		}
		if listFrom > 0 {
			stmt = splice(stmt, listFrom, listTo) // after the VALUES: its indexes stay
		}
		stmt = splice(stmt, i, end, with...)
	}
	return stmt
}

// rewriteDerivedColumns turns a derived table's column list, (SELECT a, b
// AS x ...) AS t (c1, c2), into aliases of the subquery's select items,
// (SELECT a AS c1, b AS c2 ...) AS t, which the parser reads. Only the first
// SELECT of a set operation names the columns, so only its items change. A
// list that does not match the items one for one, or items with a *, stay as
// written, for the parser to refuse.
func rewriteDerivedColumns(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if stmt[i].text != "(" || stmt[i].kind != tokPunct {
			continue
		}
		w := words(stmt[i+1:])
		if len(w) == 0 || !stmt[i+1+w[0]].is("SELECT") || !startsFromItem(stmt, i) {
			continue
		}
		closing := matchingParen(stmt, i)
		if closing < 0 {
			return stmt
		}
		// After the subquery: [AS] name ( names ).
		after := words(stmt[closing+1:])
		k := 0
		if len(after) > k && stmt[closing+1+after[k]].is("AS") {
			k++
		}
		if len(after) <= k+1 || stmt[closing+1+after[k+1]].text != "(" {
			continue
		}
		if t := stmt[closing+1+after[k]]; t.kind != tokWord && t.kind != tokIdent || k == 0 && t.kind == tokWord && isOperatorWord(t) {
			continue
		}
		open := closing + 1 + after[k+1]
		end := matchingParen(stmt, open)
		if end < 0 {
			return stmt
		}
		var names []token
	list:
		for _, t := range stmt[open+1 : end] {
			switch {
			case t.kind == tokWord || t.kind == tokIdent:
				names = append(names, t)
			case t.kind == tokPunct && t.text == ",", t.kind == tokSpace:
			default:
				names = nil // not a list of names
				break list
			}
		}
		items := selectItems(stmt, i+1+w[0], closing)
		if len(names) == 0 || len(items) != len(names) {
			continue
		}
		star := false
		for _, it := range items {
			last := lastWord(stmt, it[0], it[1])
			star = star || last >= 0 && stmt[last].text == "*"
		}
		if star {
			continue
		}
		stmt = splice(stmt, open, end+1) // after the items: their indexes stay
		for n := len(items) - 1; n >= 0; n-- {
			from, to := items[n][0], items[n][1]
			// The item's expression, then AS name, then the blanks that ended it.
			expr := lastWord(stmt, from, withoutAlias(stmt, from, to)) + 1
			trail := lastWord(stmt, from, to) + 1
			with := made(names[n].pos, " AS "+names[n].text)
			with = append(with, stmt[trail:to]...)
			stmt = splice(stmt, expr, to, with...)
		}
	}
	return stmt
}

// startsFromItem reports whether the parenthesis at stmt[open] can start a
// FROM item: it follows FROM, JOIN, LATERAL, a comma or another parenthesis,
// not an operator or a word such as EXISTS, IN or ANY, where a subquery is
// an expression: WHERE EXISTS (SELECT ...) AND (e > c) has no column list.
func startsFromItem(stmt []token, open int) bool {
	prev := lastWord(stmt, 0, open)
	if prev < 0 {
		return false
	}
	t := stmt[prev]
	return t.is("FROM") || t.is("JOIN") || t.is("LATERAL") || t.kind == tokPunct && (t.text == "," || t.text == "(")
}

// isOperatorWord reports whether t, after an expression, continues it (AND,
// OR, IS, ...) and so cannot be a table alias written without AS.
func isOperatorWord(t token) bool {
	switch strings.ToLower(t.text) {
	case "and", "or", "not", "is", "in", "like", "ilike", "between", "similar", "escape", "collate",
		"when", "then", "else", "end", "over", "filter", "within", "on", "using":
		return true
	}
	return false
}

// selectItems returns the [from, to) token ranges of the select items of the
// SELECT at sel, which ends before end: split at its top-level commas, up to
// its FROM (or whatever clause or set operation ends the list).
func selectItems(stmt []token, sel, end int) [][2]int {
	start := sel + 1
	if w := words(stmt[start:end]); len(w) > 0 && (stmt[start+w[0]].is("DISTINCT") || stmt[start+w[0]].is("ALL")) {
		start += w[0] + 1
	}
	var items [][2]int
	depth, from := 0, start
	for j := start; j < end; j++ {
		t := stmt[j]
		switch {
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		case depth == 0 && t.kind == tokPunct && t.text == ",":
			items = append(items, [2]int{from, j})
			from = j + 1
		case depth == 0 && (t.is("FROM") || t.is("WHERE") || t.is("GROUP") || t.is("HAVING") || t.is("ORDER") ||
			t.is("LIMIT") || t.is("UNION") || t.is("INTERSECT") || t.is("EXCEPT") || t.is("WINDOW")):
			return append(items, [2]int{from, j})
		}
	}
	return append(items, [2]int{from, end})
}

// lastWord is the index of the last token in stmt[from:to] that is not a
// blank, or -1.
func lastWord(stmt []token, from, to int) int {
	for j := to - 1; j >= from; j-- {
		if stmt[j].kind != tokSpace {
			return j
		}
	}
	return -1
}

// notAlias lists the words that end an expression rather than name it.
var notAlias = map[string]bool{"END": true, "NULL": true, "TRUE": true, "FALSE": true, "UNKNOWN": true,
	"YEAR": true, "QUARTER": true, "MONTH": true, "WEEK": true, "DAY": true, "HOUR": true, "MINUTE": true, "SECOND": true,
	"MICROSECOND": true}

// withoutAlias returns where the select item stmt[from:to] ends without its
// alias: AS name, or a name right after a closing parenthesis or another name
// (count(x) n, a b).
func withoutAlias(stmt []token, from, to int) int {
	last := lastWord(stmt, from, to)
	if last < 0 || stmt[last].kind != tokIdent && (stmt[last].kind != tokWord || notAlias[strings.ToUpper(stmt[last].text)]) {
		return to
	}
	prev := lastWord(stmt, from, last)
	switch {
	case prev < 0:
		return to
	case stmt[prev].is("AS"):
		return prev
	case stmt[prev].kind == tokPunct && stmt[prev].text == ")",
		stmt[prev].kind == tokIdent,
		stmt[prev].kind == tokWord && !stmt[prev].is("IS") && !stmt[prev].is("NOT") && !stmt[prev].is("DISTINCT"):
		return last
	}
	return to
}

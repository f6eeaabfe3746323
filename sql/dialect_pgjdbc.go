package sql

import "strings"

// The forms pgjdbc's DatabaseMetaData sends that the TiDB parser cannot
// read (dialect.go lists the rewrite; dialect_pgjdbc_test.go tests it).

// rewriteFieldSelection turns PostgreSQL's selection of a field of a
// composite value, (x).name, into record_field((x), 'name'): what pgjdbc's
// getPrimaryKeys and getIndexInfo write over
// information_schema._pg_expandarray, (information_schema._pg_expandarray(i.indkey)).n
// and (result.KEYS).x. The parenthesis must stand alone (not a function's
// arguments), as PostgreSQL requires; (x).* is left alone.
func rewriteFieldSelection(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if stmt[i].kind != tokPunct || stmt[i].text != ")" {
			continue
		}
		w := nextWords(stmt, i, 2)
		if len(w) < 2 || stmt[w[0]].text != "." || (stmt[w[1]].kind != tokWord && stmt[w[1]].kind != tokIdent) {
			continue
		}
		if after := nextWords(stmt, w[1], 1); len(after) == 1 && stmt[after[0]].text == "(" {
			continue // a qualified function name: no field
		}
		open := openingParen(stmt, i)
		if open < 0 {
			continue
		}
		if k := prevWord(stmt, open); k >= 0 && (stmt[k].kind == tokWord || stmt[k].kind == tokIdent) &&
			!operandStops[strings.ToLower(stmt[k].text)] && !isKeywordBefore(stmt[k]) && !exprKeywords[strings.ToLower(stmt[k].text)] {
			continue // f(x).y: the arguments of a call
		}
		name := stmt[w[1]].text
		if stmt[w[1]].kind == tokIdent {
			name = name[1 : len(name)-1]
		} else {
			name = strings.ToLower(name)
		}
		pos := stmt[open].pos
		with := made(pos, "record_field(")
		with = append(with, stmt[open:i+1]...)
		with = append(with, made(stmt[w[1]].pos, ", '"+strings.ReplaceAll(name, "'", "''")+"')")...)
		stmt = splice(stmt, open, w[1]+1, with...)
		i = open
	}
	return stmt
}

// exprKeywords are words an expression may follow, besides operandStops
// and isKeywordBefore's: a parenthesis after one is no call's.
var exprKeywords = map[string]bool{"where": true, "on": true, "not": true, "case": true, "by": true, "having": true,
	"distinct": true, "is": true, "like": true, "between": true, "set": true, "returning": true, "from": true}

// nextWords returns the indexes of the (up to) n tokens after i that are not
// blanks.
func nextWords(stmt []token, i, n int) []int {
	var out []int
	for k := i + 1; k < len(stmt) && len(out) < n; k++ {
		if stmt[k].kind != tokSpace {
			out = append(out, k)
		}
	}
	return out
}

// prevWord returns the index of the last token before i that is not a
// blank, -1 if there is none.
func prevWord(stmt []token, i int) int {
	for k := i - 1; k >= 0; k-- {
		if stmt[k].kind != tokSpace {
			return k
		}
	}
	return -1
}

// openingParen returns the index of the ( that the ) at close closes, -1 if
// none does.
func openingParen(stmt []token, close int) int {
	depth := 0
	for k := close; k >= 0; k-- {
		if stmt[k].kind != tokPunct {
			continue
		}
		switch stmt[k].text {
		case ")":
			depth++
		case "(":
			if depth--; depth == 0 {
				return k
			}
		}
	}
	return -1
}

// mysqlReservedNames are words MySQL reserves and PostgreSQL does not, that
// clients use as names: pgjdbc's getPrimaryKeys names a column KEYS.
var mysqlReservedNames = map[string]bool{"keys": true, "key": true, "index": true, "range": true}

// rewriteReservedNames quotes such a word where it can only be a name: an
// alias after AS, or a column after a table's name and a dot (result.KEYS),
// folded to lower case as PostgreSQL folds it.
func rewriteReservedNames(stmt []token, _ *dialectFacts) []token {
	for i, t := range stmt {
		if t.kind != tokWord || !mysqlReservedNames[strings.ToLower(t.text)] {
			continue
		}
		k := prevWord(stmt, i)
		if k < 0 {
			continue
		}
		isAlias := stmt[k].is("AS")
		isColumn := stmt[k].kind == tokPunct && stmt[k].text == "." && k > 0 && (stmt[k-1].kind == tokWord || stmt[k-1].kind == tokIdent)
		if !isAlias && !isColumn {
			continue
		}
		q := made(t.pos, `"`+strings.ToLower(t.text)+`"`)
		stmt[i] = q[0]
	}
	return stmt
}

// rewriteAllArrayValue turns x <> ALL (array), an array value (no list, no
// subquery), into (array_position(array, x) IS NULL), the elements compared
// as text: pgjdbc's getSQLKeywords, word <> ALL ('{a,abs,...}'::text[]).
func rewriteAllArrayValue(stmt []token, _ *dialectFacts) []token {
	return rewriteArrayValueTest(stmt, func(op, quant token) bool {
		return (op.text == "<>" || op.text == "!=") && quant.is("ALL")
	}, "IS NULL")
}

// rewriteTableFunctions turns a call of a set-returning function the
// system catalog holds as a table (SystemFunctionTables) into that table's
// name, where a FROM item stands: FROM pg_catalog.pg_get_keywords() is
// FROM pg_catalog.pg_get_keywords.
func rewriteTableFunctions(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if stmt[i].kind != tokWord || !SystemFunctionTables[strings.ToLower(stmt[i].text)] {
			continue
		}
		w := nextWords(stmt, i, 2)
		if len(w) < 2 || stmt[w[0]].text != "(" || stmt[w[1]].text != ")" {
			continue
		}
		k := prevWord(stmt, i)
		if k >= 2 && stmt[k].text == "." && stmt[k-1].is(PgCatalog) {
			k = prevWord(stmt, k-1)
		}
		if k < 0 || !(stmt[k].is("FROM") || stmt[k].is("JOIN") || stmt[k].text == ",") {
			continue
		}
		stmt = splice(stmt, i+1, w[1]+1)
	}
	return stmt
}

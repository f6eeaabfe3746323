package sql

// The dialect layer's rewrites, in the order dialectRewrites (dialect.go)
// lists them, and the token helpers they share.

import (
	"slices"
	"strings"
)

// rewriteMaterialized drops MATERIALIZED from CREATE or DROP MATERIALIZED VIEW.
func rewriteMaterialized(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	if len(w) < 3 || !(stmt[w[0]].is("CREATE") || stmt[w[0]].is("DROP")) || !stmt[w[1]].is("MATERIALIZED") || !stmt[w[2]].is("VIEW") {
		return stmt
	}
	return splice(stmt, w[1], w[2])
}

// mysqlShow lists the words after SHOW that MySQL's own statements start with.
var mysqlShow = map[string]bool{"tables": true, "databases": true, "variables": true, "columns": true,
	"fields": true, "processlist": true, "status": true, "warnings": true, "errors": true, "engines": true,
	"full": true, "create": true, "index": true, "indexes": true, "keys": true, "grants": true,
	"triggers": true, "schemas": true, "session": true, "global": true, "collation": true, "charset": true,
	"plugins": true, "privileges": true, "profiles": true, "events": true}

// rewriteShowName turns PostgreSQL's SHOW name, a whole statement, into
// MySQL's SHOW VARIABLES LIKE 'name': also the multi-word names (SHOW TIME
// ZONE, SHOW TRANSACTION ISOLATION LEVEL, SHOW SESSION AUTHORIZATION), a
// custom parameter of two parts (SHOW myapp.tenant), and SHOW ALL, which
// becomes SHOW VARIABLES.
func rewriteShowName(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	if n := len(w); n > 0 && stmt[w[n-1]].text == ";" {
		w = w[:n-1]
	}
	if len(w) < 2 || !stmt[w[0]].is("SHOW") {
		return stmt
	}
	rest := make([]token, 0, len(w)-1)
	for _, k := range w[1:] {
		rest = append(rest, stmt[k])
	}
	at := rest[0].pos
	if len(rest) == 1 && rest[0].is("ALL") {
		return splice(stmt, w[1], w[len(w)-1]+1, made(at, "VARIABLES")...)
	}
	if len(rest) == 1 && mysqlShow[strings.ToLower(rest[0].text)] {
		return stmt
	}
	if len(rest) == 2 && rest[0].is("SESSION") && !rest[1].is("AUTHORIZATION") {
		return stmt // MySQL's SHOW SESSION VARIABLES, STATUS
	}
	name, ok := readParamName(rest)
	if !ok || (len(rest) == 1 && rest[0].kind != tokWord) {
		return stmt
	}
	return splice(stmt, w[1], w[len(w)-1]+1, made(at, "VARIABLES LIKE '"+strings.ReplaceAll(name, "'", "''")+"'")...)
}

// rewriteDistinctFrom turns a IS NOT DISTINCT FROM b into a <=> b and
// a IS DISTINCT FROM b into a <=> b IS FALSE, IS FALSE going after b's last
// token: <=>, IS and the comparisons are of one precedence, left to right, so
// (a <=> b) IS FALSE is how the parser groups it.
func rewriteDistinctFrom(stmt []token, _ *dialectFacts) []token {
	for {
		w := words(stmt)
		at, not := -1, false
		for k := 0; k+2 < len(w); k++ {
			if !stmt[w[k]].is("IS") {
				continue
			}
			if stmt[w[k+1]].is("DISTINCT") && stmt[w[k+2]].is("FROM") {
				at = k
				break
			}
			if k+3 < len(w) && stmt[w[k+1]].is("NOT") && stmt[w[k+2]].is("DISTINCT") && stmt[w[k+3]].is("FROM") {
				at, not = k, true
				break
			}
		}
		if at < 0 {
			return stmt
		}
		is := stmt[w[at]]
		last := at + 2
		if not {
			last = at + 3
		}
		if not {
			stmt = splice(stmt, w[at], w[last]+1, made(is.pos, "<=>")...)
			continue
		}
		end := operandEnd(stmt, w[last]+1)
		stmt = splice(stmt, end, end, made(is.pos, " IS FALSE")...)
		stmt = splice(stmt, w[at], w[last]+1, made(is.pos, "<=>")...)
	}
}

// operandStops are the words that end the right operand of a comparison.
var operandStops = map[string]bool{"and": true, "or": true, "xor": true, "then": true, "when": true, "else": true,
	"end": true, "from": true, "where": true, "group": true, "having": true, "order": true, "limit": true,
	"union": true, "intersect": true, "except": true, "as": true, "asc": true, "desc": true, "on": true,
	"join": true, "inner": true, "left": true, "right": true, "cross": true, "is": true, "between": true,
	"like": true, "in": true, "not": true, "window": true, "offset": true, "into": true}

// operandEnd returns the index of the token after the operand starting at
// stmt[i]: the first token outside parentheses (opened within the operand)
// that ends it, a stop word, a comparison, a comma, a closing parenthesis or
// the statement's end; blanks before it are left out.
func operandEnd(stmt []token, i int) int {
	depth := 0
	end := i
	for ; i < len(stmt); i++ {
		t := stmt[i]
		if t.kind == tokSpace {
			continue
		}
		if depth == 0 {
			if t.kind == tokWord && operandStops[strings.ToLower(t.text)] {
				break
			}
			if t.kind == tokPunct {
				switch t.text {
				case ",", ")", ";", "=", "<", ">", "<=", ">=", "<>", "!=", "<=>":
					return end
				}
			}
		}
		if t.kind == tokPunct {
			switch t.text {
			case "(":
				depth++
			case ")":
				depth--
			}
		}
		end = i + 1
	}
	return end
}

// rewriteColonCast turns PostgreSQL's x::type into CAST(x AS type), the
// operand being what precedes :: as one primary: a literal, a (qualified)
// name, a parenthesised expression or a function call. Chains (x::a::b) nest.
func rewriteColonCast(stmt []token, _ *dialectFacts) []token {
	for {
		at := -1
		for i, t := range stmt {
			if t.kind == tokPunct && t.text == "::" {
				at = i
				break
			}
		}
		if at < 0 {
			return stmt
		}
		start := operandStart(stmt, at)
		typeEnd := typeNameEnd(stmt, at+1)
		if start < 0 || typeEnd <= at+1 {
			return stmt // not a form this layer knows: the parser reports it
		}
		colon := stmt[at]
		with := append(made(colon.pos, "CAST("), stmt[start:at]...)
		with = append(with, made(colon.pos, " AS ")...)
		with = append(with, stmt[at+1:typeEnd]...)
		with = append(with, made(colon.pos, ")")...)
		stmt = splice(stmt, start, typeEnd, with...)
	}
}

// operandStart returns the index of the first token of the primary that ends
// right before stmt[end] (blanks between them allowed), or -1.
func operandStart(stmt []token, end int) int {
	i := end - 1
	for i >= 0 && stmt[i].kind == tokSpace {
		i--
	}
	if i < 0 {
		return -1
	}
	t := stmt[i]
	switch {
	case t.kind == tokPunct && t.text == ")":
		depth := 0
		for ; i >= 0; i-- {
			if stmt[i].kind != tokPunct {
				continue
			}
			if stmt[i].text == ")" {
				depth++
			} else if stmt[i].text == "(" {
				if depth--; depth == 0 {
					break
				}
			}
		}
		if i < 0 {
			return -1
		}
		// A function's name right before the parenthesis belongs to it.
		if j := i - 1; j >= 0 && stmt[j].kind == tokWord && !operandStops[strings.ToLower(stmt[j].text)] && !isKeywordBefore(stmt[j]) {
			i = j
			// and its schema: pg_catalog.pg_get_serial_sequence(...)::regclass.
			if i >= 2 && stmt[i-1].text == "." && stmt[i-2].kind == tokWord {
				i -= 2
			}
		}
		return i
	case t.kind == tokString:
		// A typed literal's type belongs to it: TIMESTAMP '...'::timestamptz.
		if j := prevWord(stmt, i); j >= 0 && (stmt[j].is("TIMESTAMP") || stmt[j].is("DATE") || stmt[j].is("TIMESTAMPTZ")) {
			return j
		}
		return i
	case t.kind == tokNumber || t.kind == tokParam:
		return i
	case t.kind == tokWord || t.kind == tokIdent:
		// A qualified name: a.b.c.
		for i >= 2 && stmt[i-1].kind == tokPunct && stmt[i-1].text == "." && (stmt[i-2].kind == tokWord || stmt[i-2].kind == tokIdent) {
			i -= 2
		}
		return i
	}
	return -1
}

// isKeywordBefore reports whether a word before a parenthesis is a keyword
// that opens a list or subquery rather than a function's name.
func isKeywordBefore(t token) bool {
	switch strings.ToLower(t.text) {
	case "in", "exists", "select", "values", "any", "all", "some", "using", "over":
		return true
	}
	return false
}

// typeNameEnd returns the index after the type name starting at stmt[i]
// (blanks before it allowed): a word, the words some types continue with
// (double precision, character varying, timestamp with[out] time zone), then
// a parenthesised length or precision.
func typeNameEnd(stmt []token, i int) int {
	next := func(i int) int {
		for i < len(stmt) && stmt[i].kind == tokSpace {
			i++
		}
		return i
	}
	i = next(i)
	if i >= len(stmt) || stmt[i].kind != tokWord {
		return -1
	}
	first := strings.ToLower(stmt[i].text)
	end := i + 1
	continues := map[string][]string{"double": {"precision"}, "character": {"varying"},
		"timestamp": {"without", "with", "time", "zone"}, "time": {"without", "with", "time", "zone"}}
	for {
		j := next(end)
		if j < len(stmt) && stmt[j].kind == tokWord && slices.Contains(continues[first], strings.ToLower(stmt[j].text)) {
			end = j + 1
			continue
		}
		break
	}
	if j := next(end); j < len(stmt) && stmt[j].kind == tokPunct && stmt[j].text == "(" {
		for k := j; k < len(stmt); k++ {
			if stmt[k].kind == tokPunct && stmt[k].text == ")" {
				return k + 1
			}
		}
	}
	return end
}

// castTypes maps SQL type names the parser cannot CAST to (lower case, words
// joined by one space) to MySQL's.
var castTypes = map[string]string{
	"text": "CHAR", "varchar": "CHAR", "character varying": "CHAR", "string": "CHAR", "character": "CHAR",
	"int": "SIGNED", "integer": "SIGNED", "int2": "SIGNED", "int4": "SIGNED", "int8": "SIGNED",
	"smallint": "SIGNED", "bigint": "SIGNED", "numeric": "DECIMAL",
	"timestamp": "DATETIME", "timestamp without time zone": "DATETIME",
	"double precision": "DOUBLE", "float8": "DOUBLE", "float4": "FLOAT", "real": "FLOAT",
	"name": "CHAR", "oid": "SIGNED",
}

// funcCasts are the types a CAST to is bound as a function of the binder
// (bind_pgfunc.go): MySQL's CAST has no such target (bool, a keyword of
// its grammar, is quoted to be a function name).
var funcCasts = map[string]string{"boolean": `"bool"`, "bool": `"bool"`, "timestamptz": "timestamptz",
	"timestamp with time zone": "timestamptz", "bytea": "bytea", "interval": `"interval"`}

// rewriteCastTypes renames the type of each CAST(x AS type) the parser cannot
// read to MySQL's name for it, keeping a length or precision: VARCHAR(20) is
// CHAR(20), NUMERIC(10,2) DECIMAL(10,2).
func rewriteCastTypes(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("CAST") {
			continue
		}
		open := i + 1
		for open < len(stmt) && stmt[open].kind == tokSpace {
			open++
		}
		if open >= len(stmt) || stmt[open].text != "(" {
			continue
		}
		// The AS at depth 1 of this CAST's parentheses.
		depth, as, closing := 0, -1, -1
		for k := open; k < len(stmt) && closing < 0; k++ {
			t := stmt[k]
			if t.kind == tokPunct && t.text == "(" {
				depth++
			} else if t.kind == tokPunct && t.text == ")" {
				if depth--; depth == 0 {
					closing = k
				}
			} else if depth == 1 && t.is("AS") {
				as = k
			}
		}
		if as < 0 {
			continue
		}
		if ty := words(stmt[as+1 : max(closing, as+1)]); closing > 0 && len(ty) == 1 && regTypes[strings.ToLower(stmt[as+1+ty[0]].text)] {
			reg := stmt[as+1+ty[0]]
			with := append(made(stmt[i].pos, strings.ToLower(reg.text)+"("), stmt[open+1:as]...)
			with = append(with, made(reg.pos, ")")...)
			stmt = splice(stmt, i, closing+1, with...)
			continue
		}
		first := as + 1
		for first < len(stmt) && stmt[first].kind == tokSpace {
			first++
		}
		end := typeNameEnd(stmt, first)
		if end < 0 {
			continue
		}
		// The type's words, without its parenthesised part.
		var ws []string
		wordsEnd := first
		for k := first; k < end; k++ {
			if stmt[k].kind == tokPunct && stmt[k].text == "(" {
				break
			}
			if stmt[k].kind == tokWord {
				ws = append(ws, strings.ToLower(stmt[k].text))
				wordsEnd = k + 1
			}
		}
		if fn, ok := funcCasts[strings.Join(ws, " ")]; ok && closing > 0 && end <= closing {
			// A type the parser cannot CAST to, bound as the function-style
			// cast PostgreSQL also has: bool(x), timestamptz(x).
			with := append(made(stmt[i].pos, fn+"("), stmt[open+1:as]...)
			with = append(with, made(stmt[first].pos, ")")...)
			stmt = splice(stmt, i, closing+1, with...)
			continue
		}
		name, ok := castTypes[strings.Join(ws, " ")]
		if !ok {
			continue
		}
		stmt = splice(stmt, first, wordsEnd, made(stmt[first].pos, name)...)
	}
	return stmt
}

// rewriteNullsOrder takes NULLS FIRST and NULLS LAST out of ORDER BY items,
// telling the binder (dialectFacts) by the offset of the item's first token.
func rewriteNullsOrder(stmt []token, f *dialectFacts) []token {
	for i := 0; i+1 < len(stmt); i++ {
		if !stmt[i].is("NULLS") {
			continue
		}
		j := i + 1
		for j < len(stmt) && stmt[j].kind == tokSpace {
			j++
		}
		if j >= len(stmt) || !(stmt[j].is("FIRST") || stmt[j].is("LAST")) {
			continue
		}
		start := orderItemStart(stmt, i)
		if start < 0 {
			continue
		}
		f.nullsFirst[stmt[start].pos] = stmt[j].is("FIRST")
		from := i
		if from > 0 && stmt[from-1].kind == tokSpace {
			from-- // the blank before NULLS goes too
		}
		stmt = splice(stmt, from, j+1)
		i = from
		// An ORDER BY position (ORDER BY 2 DESC NULLS LAST), which the
		// parser keeps no offset of, is written (2), a position still for
		// the binder as for PostgreSQL.
		if w := words(stmt[start:i]); stmt[start].kind == tokNumber && strings.Trim(stmt[start].text, "0123456789") == "" &&
			(len(w) == 1 || len(w) == 2 && (stmt[start+w[1]].is("ASC") || stmt[start+w[1]].is("DESC"))) {
			pos := stmt[start].pos
			with := append(append(made(pos, "("), stmt[start]), made(pos, ")")...)
			stmt = splice(stmt, start, start+1, with...)
			i += 2
		}
	}
	return stmt
}

// orderItemStart returns the index of the first token of the ORDER BY item
// that ends before stmt[end]: the token after the BY or comma before it at
// its depth of parentheses, or -1 if there is none.
func orderItemStart(stmt []token, end int) int {
	depth := 0
	for i := end - 1; i >= 0; i-- {
		t := stmt[i]
		switch {
		case t.kind == tokPunct && t.text == ")":
			depth++
		case t.kind == tokPunct && t.text == "(":
			if depth == 0 {
				return -1
			}
			depth--
		case depth == 0 && (t.is("BY") || t.kind == tokPunct && t.text == ","):
			k := i + 1
			for k < end && stmt[k].kind == tokSpace {
				k++
			}
			if k >= end {
				return -1
			}
			return k
		}
	}
	return -1
}

// rewriteAggFilter turns agg(args) FILTER (WHERE cond) into
// agg(CASE WHEN cond THEN args END), COUNT(*) counting 1s; a DISTINCT stays
// in front.
func rewriteAggFilter(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("FILTER") {
			continue
		}
		open := i + 1
		for open < len(stmt) && stmt[open].kind == tokSpace {
			open++
		}
		where := open + 1
		for where < len(stmt) && stmt[where].kind == tokSpace {
			where++
		}
		if open >= len(stmt) || stmt[open].text != "(" || where >= len(stmt) || !stmt[where].is("WHERE") {
			continue
		}
		closing := matchingParen(stmt, open)
		// The aggregate's call right before FILTER.
		callEnd := i - 1
		for callEnd >= 0 && stmt[callEnd].kind == tokSpace {
			callEnd--
		}
		if closing < 0 || callEnd < 0 || stmt[callEnd].text != ")" {
			continue
		}
		callOpen := -1
		depth := 0
		for k := callEnd; k >= 0; k-- {
			if stmt[k].kind != tokPunct {
				continue
			}
			if stmt[k].text == ")" {
				depth++
			} else if stmt[k].text == "(" {
				if depth--; depth == 0 {
					callOpen = k
					break
				}
			}
		}
		if callOpen < 0 {
			continue
		}
		args := stmt[callOpen+1 : callEnd]
		var distinct []token
		w := words(args)
		if len(w) > 0 && args[w[0]].is("DISTINCT") {
			distinct = append(trimBlanks(args[:w[0]+1:w[0]+1]), made(args[w[0]].pos, " ")...)
			args = args[w[0]+1:]
			w = words(args)
		}
		if len(w) == 1 && args[w[0]].text == "*" {
			args = made(args[w[0]].pos, "1")
		}
		// Only the first argument is filtered: string_agg's separator and an
		// ORDER BY inside the call stay as they are.
		var rest []token
		depth = 0
		for k, t := range args {
			switch {
			case t.kind == tokPunct && t.text == "(":
				depth++
			case t.kind == tokPunct && t.text == ")":
				depth--
			case depth == 0 && (t.kind == tokPunct && t.text == "," || t.is("ORDER")):
				args, rest = args[:k], args[k:]
			}
			if rest != nil {
				break
			}
		}
		at := stmt[i].pos
		with := append([]token{}, distinct...)
		with = append(with, made(at, "CASE WHEN ")...)
		with = append(with, trimBlanks(stmt[where+1:closing])...)
		with = append(with, made(at, " THEN ")...)
		with = append(with, trimBlanks(args)...)
		with = append(with, made(at, " END")...)
		if rest != nil {
			with = append(append(with, made(at, " ")...), rest...)
		}
		// The call's arguments replaced, FILTER (...) dropped.
		stmt = append(append(append(append([]token{}, stmt[:callOpen+1]...), with...), stmt[callEnd]), stmt[closing+1:]...)
	}
	return stmt
}

// trimBlanks drops the blanks at both ends of toks.
func trimBlanks(toks []token) []token {
	for len(toks) > 0 && toks[0].kind == tokSpace {
		toks = toks[1:]
	}
	for len(toks) > 0 && toks[len(toks)-1].kind == tokSpace {
		toks = toks[:len(toks)-1]
	}
	return toks
}

// matchingParen returns the index of the parenthesis closing stmt[open], or -1.
func matchingParen(stmt []token, open int) int {
	depth := 0
	for k := open; k < len(stmt); k++ {
		if stmt[k].kind != tokPunct {
			continue
		}
		switch stmt[k].text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return k
			}
		}
	}
	return -1
}

// pgOnlyFields are the EXTRACT fields PostgreSQL has and MySQL's grammar does
// not.
var pgOnlyFields = map[string]bool{"dow": true, "doy": true, "isodow": true, "isoyear": true, "epoch": true,
	"decade": true, "century": true, "millennium": true, "milliseconds": true, "microseconds": true}

// rewriteExtractFields turns EXTRACT(field FROM x), for a field only
// PostgreSQL has, into date_part('field', x).
func rewriteExtractFields(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("EXTRACT") {
			continue
		}
		w := words(stmt[i:])
		if len(w) < 4 || stmt[i+w[1]].text != "(" || stmt[i+w[2]].kind != tokWord || !stmt[i+w[3]].is("FROM") {
			continue
		}
		field := strings.ToLower(stmt[i+w[2]].text)
		if !pgOnlyFields[field] {
			continue
		}
		stmt = splice(stmt, i, i+w[3]+1, made(stmt[i].pos, "date_part('"+field+"',")...)
	}
	return stmt
}

// distinctOnItem is the name of the select item DISTINCT ON becomes; the
// binder keeps the rows where it is 1 and drops it.
const distinctOnItem = "$distinct_on"

// rewriteDistinctOn turns SELECT DISTINCT ON (exprs) items ... [ORDER BY o]
// into SELECT items, ROW_NUMBER() OVER (PARTITION BY exprs [ORDER BY o]) AS
// "$distinct_on" ... [ORDER BY o].
func rewriteDistinctOn(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("SELECT") {
			continue
		}
		w := words(stmt[i:])
		if len(w) < 4 || !stmt[i+w[1]].is("DISTINCT") || !stmt[i+w[2]].is("ON") || stmt[i+w[3]].text != "(" {
			continue
		}
		open := i + w[3]
		closing := matchingParen(stmt, open)
		if closing < 0 {
			return stmt
		}
		exprs := append([]token{}, trimBlanks(stmt[open+1:closing])...)
		// This SELECT's FROM and ORDER BY: the first at its depth.
		depth, from, order, end := 0, -1, -1, len(stmt)
		for j := closing + 1; j < len(stmt) && end == len(stmt); j++ {
			t := stmt[j]
			switch {
			case t.kind == tokPunct && t.text == "(":
				depth++
			case t.kind == tokPunct && t.text == ")":
				if depth == 0 {
					end = j
				}
				depth--
			case depth == 0 && t.text == ";":
				end = j
			case depth == 0 && from < 0 && t.is("FROM"):
				from = j
			case depth == 0 && t.is("ORDER"):
				order = j
			case depth == 0 && (t.is("LIMIT") || t.is("OFFSET") || t.is("UNION") || t.is("INTERSECT") || t.is("EXCEPT")):
				end = j
			}
		}
		var orderBy []token
		if order >= 0 {
			orderBy = trimBlanks(stmt[order:end])
		}
		at := stmt[open].pos
		item := made(at, ", ROW_NUMBER() OVER (PARTITION BY ")
		item = append(item, exprs...)
		if len(orderBy) > 0 {
			item = append(item, made(at, " ")...)
			item = append(item, orderBy...) // the same tokens: NULLS facts apply to both
		}
		item = append(item, made(at, ") AS \""+distinctOnItem+"\" ")...)
		insert := from
		if insert < 0 {
			insert = end
		}
		stmt = splice(stmt, insert, insert, item...)
		stmt = splice(stmt, i+w[1]+1, closing+1) // DISTINCT ON (...) out
		stmt = splice(stmt, i+w[1], i+w[1]+1)    // and DISTINCT
	}
	return stmt
}

// rewriteStringAgg turns PostgreSQL's string_agg([DISTINCT] x, sep [ORDER BY
// ...]) into MySQL's GROUP_CONCAT([DISTINCT] x [ORDER BY ...] SEPARATOR sep),
// which the parser reads as an aggregate.
func rewriteStringAgg(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("STRING_AGG") {
			continue
		}
		open := i + 1
		for open < len(stmt) && stmt[open].kind == tokSpace {
			open++
		}
		if open >= len(stmt) || stmt[open].text != "(" {
			continue
		}
		closing := matchingParen(stmt, open)
		if closing < 0 {
			return stmt
		}
		// The argument list: x, then sep at the first top-level comma, then
		// ORDER BY at the first top-level ORDER.
		comma, order, depth := -1, closing, 0
		for k := open + 1; k < closing; k++ {
			switch t := stmt[k]; {
			case t.kind == tokPunct && t.text == "(":
				depth++
			case t.kind == tokPunct && t.text == ")":
				depth--
			case depth == 0 && t.kind == tokPunct && t.text == "," && comma < 0:
				comma = k
			case depth == 0 && t.is("ORDER") && comma >= 0 && order == closing:
				order = k
			}
		}
		if comma < 0 {
			continue // one argument: the parser reports string_agg's
		}
		at := stmt[i].pos
		with := made(at, "GROUP_CONCAT(")
		with = append(with, trimBlanks(stmt[open+1:comma])...)
		if order < closing {
			with = append(append(with, made(at, " ")...), trimBlanks(stmt[order:closing])...)
		}
		with = append(with, made(at, " SEPARATOR ")...)
		with = append(with, trimBlanks(stmt[comma+1:order])...)
		with = append(with, made(stmt[closing].pos, ")")...)
		stmt = splice(stmt, i, closing+1, with...)
	}
	return stmt
}

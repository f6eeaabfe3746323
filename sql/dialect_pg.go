package sql

// The dialect layer's rewrites of the PostgreSQL forms clients send about the
// system catalog (systables.go): escape strings, regular-expression
// operators, OPERATOR(schema.op), COLLATE, qualified and array type names,
// ARRAY(subquery) and = ANY (ARRAY[...]). dialect.go lists them in order.

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hummer-db/hummer/exec/types"
)

// rewriteEscapeStrings turns E'...' into a plain string literal holding the
// characters its backslash escapes stand for (the parser reads strings with
// NO_BACKSLASH_ESCAPES, as PostgreSQL's standard_conforming_strings), and a
// dollar-quoted string ($$it's$$, $fn$...$fn$) into one holding its text.
func rewriteEscapeStrings(stmt []token, _ *dialectFacts) []token {
	for i, t := range stmt {
		if t.kind == tokString && strings.HasPrefix(t.text, "$") {
			// $$...$$ or $tag$...$tag$: the text between, as it is.
			tag := dollarTag(t.text)
			body := strings.TrimSuffix(t.text[len(tag):], tag)
			stmt = splice(stmt, i, i+1, made(t.pos, "'"+strings.ReplaceAll(body, "'", "''")+"'")...)
			continue
		}
		if t.kind != tokString || len(t.text) < 3 || (t.text[0] != 'e' && t.text[0] != 'E') {
			continue
		}
		body := t.text[2:]
		body = strings.TrimSuffix(body, "'")
		s := unescapeE(body)
		stmt = splice(stmt, i, i+1, made(t.pos, "'"+strings.ReplaceAll(s, "'", "''")+"'")...)
	}
	return stmt
}

// unescapeE decodes the body of an E” string: \b \f \n \r \t, \ooo octal,
// \xhh hex, \uXXXX and \UXXXXXXXX, a doubled quote, and any other character
// after a backslash standing for itself.
func unescapeE(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\'' && i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch d := s[i]; d {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[d]
			j := i + 1
			for j < len(s) && j < i+1+width && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte(d)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if d == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i = j - 1
		default:
			if d >= '0' && d <= '7' {
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 16)
				b.WriteByte(byte(v))
				i = j - 1
				continue
			}
			b.WriteByte(d)
		}
	}
	out := b.String()
	if !utf8.ValidString(out) {
		return strings.ToValidUTF8(out, "\uFFFD")
	}
	return out
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// rewriteOperatorSyntax turns OPERATOR(schema.op) into op.
func rewriteOperatorSyntax(stmt []token, _ *dialectFacts) []token {
	for {
		w := words(stmt)
		at := -1
		for k := 0; k+5 < len(w); k++ {
			if stmt[w[k]].is("OPERATOR") && stmt[w[k+1]].text == "(" && stmt[w[k+2]].kind == tokWord &&
				stmt[w[k+3]].text == "." && stmt[w[k+4]].kind == tokPunct && stmt[w[k+5]].text == ")" {
				at = k
				break
			}
		}
		if at < 0 {
			return stmt
		}
		// The operator may be cut into several punctuation tokens (!~*).
		end := at + 4
		for end < len(w) && stmt[w[end]].kind == tokPunct && stmt[w[end]].text != ")" {
			end++
		}
		if end >= len(w) || stmt[w[end]].text != ")" {
			return stmt
		}
		var op strings.Builder
		for k := at + 4; k < end; k++ {
			op.WriteString(stmt[w[k]].text)
		}
		stmt = splice(stmt, w[at], w[end]+1, made(stmt[w[at]].pos, " "+op.String()+" ")...)
	}
}

// rewriteRegexMatch turns PostgreSQL's regular-expression match operators
// into MySQL's REGEXP, which the binder gives PostgreSQL's meaning
// (case-sensitive, Go's RE2 syntax for what the two share): a ~ b is
// a REGEXP b, a !~ b is a NOT REGEXP b, and the case-insensitive ~* and !~*
// put RE2's (?i) flag before the pattern.
func rewriteRegexMatch(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		t := stmt[i]
		if t.kind != tokPunct || (t.text != "~" && t.text != "!") {
			continue
		}
		j, not := i, false
		if t.text == "!" {
			if j+1 >= len(stmt) || stmt[j+1].text != "~" {
				continue
			}
			j, not = j+1, true
		}
		insensitive := j+1 < len(stmt) && stmt[j+1].text == "*"
		if insensitive {
			j++
		}
		op := " REGEXP "
		if not {
			op = " NOT REGEXP "
		}
		if insensitive {
			end := operandEnd(stmt, j+1)
			with := made(t.pos, op+"CONCAT('(?i)', ")
			with = append(with, stmt[j+1:end]...)
			with = append(with, made(t.pos, ")")...)
			stmt = splice(stmt, i, end, with...)
		} else {
			stmt = splice(stmt, i, j+1, made(t.pos, op)...)
		}
	}
	return stmt
}

// rewriteCollate drops COLLATE with PostgreSQL's collation names
// (pg_catalog.default, "C", "POSIX", "default"): Hummer compares text
// by bytes, which is what they ask for or near enough to it.
func rewriteCollate(stmt []token, _ *dialectFacts) []token {
	for {
		w := words(stmt)
		at, end := -1, -1
		for k := 0; k+1 < len(w); k++ {
			if !stmt[w[k]].is("COLLATE") {
				continue
			}
			n := stmt[w[k+1]]
			switch {
			case k+3 < len(w) && n.is(PgCatalog) && stmt[w[k+2]].text == ".":
				at, end = k, k+3
			case n.kind == tokIdent && pgCollations[strings.ToLower(strings.Trim(n.text, "\""))]:
				at, end = k, k+1
			}
			if at >= 0 {
				break
			}
		}
		if at < 0 {
			return stmt
		}
		stmt = splice(stmt, w[at], w[end]+1, made(stmt[w[at]].pos, " ")...)
	}
}

var pgCollations = map[string]bool{"c": true, "posix": true, "default": true, "ucs_basic": true}

// rewriteQualifiedTypes drops pg_catalog. before a type name after :: or a
// CAST's AS (pg_catalog.text is text), and turns a cast to an array type
// (int2[], text[]) into one to text: Hummer holds arrays as their text form.
func rewriteQualifiedTypes(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		t := stmt[i]
		if !(t.kind == tokPunct && t.text == "::") && !t.is("AS") {
			continue
		}
		j := i + 1
		for j < len(stmt) && stmt[j].kind == tokSpace {
			j++
		}
		if j+2 < len(stmt) && stmt[j].is(PgCatalog) && stmt[j+1].text == "." && stmt[j+2].kind != tokSpace {
			stmt = splice(stmt, j, j+2)
		}
		if j < len(stmt) && stmt[j].kind == tokIdent && strings.EqualFold(stmt[j].text, `"char"`) {
			stmt = splice(stmt, j, j+1, made(stmt[j].pos, "text")...)
		}
		// An array type: the name and [].
		if j < len(stmt) && stmt[j].kind == tokWord {
			k := j + 1
			if k+1 < len(stmt) && stmt[k].text == "[" && stmt[k+1].text == "]" {
				stmt = splice(stmt, j, k+2, made(stmt[j].pos, "text")...)
			}
		}
	}
	return stmt
}

// regTypes are PostgreSQL's object-identifier types a value is cast to, to
// read an object's name from its oid or the other way round; the binder
// knows each as a function (bind_pgfunc.go), which PostgreSQL's
// function-style cast regclass(x) also is.
var regTypes = map[string]bool{"regclass": true, "regtype": true, "regnamespace": true, "regrole": true,
	"regproc": true, "regprocedure": true}

// rewriteArraySubquery turns ARRAY(SELECT x FROM ...) into
// COALESCE((SELECT array_agg_nonnull(x) FROM ...), '{}'): an array of the rows of a
// one-column subquery, empty when it has none (array_agg's is NULL). Its
// NULLs are left out (rewriteArrayAgg): the outer join a correlated subquery
// is decorrelated into adds a NULL row where the subquery has none. An
// ORDER BY at the subquery's top level moves into array_agg, a position
// (ORDER BY 1) standing for x.
func rewriteArraySubquery(stmt []token, _ *dialectFacts) []token {
	for {
		w := words(stmt)
		at := -1
		for k := 0; k+2 < len(w); k++ {
			if stmt[w[k]].is("ARRAY") && stmt[w[k+1]].text == "(" && stmt[w[k+2]].is("SELECT") {
				at = k
				break
			}
		}
		if at < 0 {
			return stmt
		}
		open := w[at+1]
		closing, from, order := -1, -1, -1
		depth := 0
		for i := open; i < len(stmt) && closing < 0; i++ {
			t := stmt[i]
			switch {
			case t.text == "(" && t.kind == tokPunct:
				depth++
			case t.text == ")" && t.kind == tokPunct:
				if depth--; depth == 0 {
					closing = i
				}
			case depth == 1 && t.is("FROM") && from < 0:
				from = i
			case depth == 1 && t.is("ORDER") && order < 0:
				order = i
			case depth == 1 && t.kind == tokPunct && t.text == "," && from < 0:
				return stmt // several columns: not an array this layer knows
			}
		}
		if closing < 0 || from < 0 {
			return stmt
		}
		sel := w[at+2]
		item := stmt[sel+1 : from]
		pos := stmt[w[at]].pos
		with := made(pos, "COALESCE((SELECT array_agg_nonnull(")
		with = append(with, item...)
		bodyEnd := closing
		if order > 0 {
			bodyEnd = order
			by := stmt[order:closing]
			// ORDER BY 1: the item itself.
			if bw := words(by); len(bw) == 3 && by[bw[2]].text == "1" {
				by = append(append(append([]token{}, by[:bw[2]]...), item...), by[bw[2]+1:]...)
			}
			with = append(with, made(pos, " ")...)
			with = append(with, by...)
		}
		with = append(with, made(pos, ") ")...)
		with = append(with, stmt[from:bodyEnd]...)
		with = append(with, made(pos, "), '{}')")...)
		stmt = splice(stmt, w[at], closing+1, with...)
	}
}

// rewriteAnyArray turns x = ANY (ARRAY[a, b]) into x IN (a, b) and
// x <> ALL (ARRAY[a, b]) into x NOT IN (a, b); x = ANY (array), an array
// value (a column of the catalog), into (array_position(array, x) IS NOT
// NULL), the elements compared as text.
func rewriteAnyArray(stmt []token, _ *dialectFacts) []token {
	stmt = rewriteAnyArrayValue(stmt)
	for {
		w := words(stmt)
		at, not := -1, false
		for k := 0; k+3 < len(w); k++ {
			op := stmt[w[k]].text
			if stmt[w[k+2]].text != "(" || !stmt[w[k+3]].is("ARRAY") || k+4 >= len(w) || stmt[w[k+4]].text != "[" {
				continue
			}
			if op == "=" && stmt[w[k+1]].is("ANY") || op == "=" && stmt[w[k+1]].is("SOME") {
				at = k
				break
			}
			if (op == "<>" || op == "!=") && stmt[w[k+1]].is("ALL") {
				at, not = k, true
				break
			}
		}
		if at < 0 {
			return stmt
		}
		// The ] that closes ARRAY[ and the ) after it.
		depth, closeBr := 0, -1
		for k := at + 4; k < len(w); k++ {
			switch stmt[w[k]].text {
			case "[", "(":
				depth++
			case "]", ")":
				depth--
			}
			if depth == 0 {
				closeBr = k
				break
			}
		}
		if closeBr < 0 || closeBr+1 >= len(w) || stmt[w[closeBr+1]].text != ")" {
			return stmt
		}
		pos := stmt[w[at]].pos
		in := " IN ("
		if not {
			in = " NOT IN ("
		}
		with := made(pos, in)
		with = append(with, stmt[w[at+4]+1:w[closeBr]]...)
		with = append(with, made(pos, ")")...)
		stmt = splice(stmt, w[at], w[closeBr+1]+1, with...)
	}
}

// rewriteArrayAgg turns array_agg(x [ORDER BY ...]) into
// ('{' || GROUP_CONCAT(COALESCE(array_element(x), 'NULL') [ORDER BY ...] SEPARATOR ',') || '}'):
// the text form of the array of the group's values, NULLs kept, NULL for no
// rows, as array_agg's (array_element quotes a value as an array's text
// form does, the text 'NULL' too, and keeps NULL NULL: see it in exec/expr).
// array_agg_nonnull(x), rewriteArraySubquery's, leaves the NULLs out.
func rewriteArrayAgg(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		nonNull := stmt[i].is("ARRAY_AGG_NONNULL")
		if !stmt[i].is("ARRAY_AGG") && !nonNull {
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
		order, depth := closing, 0
		for k := open + 1; k < closing; k++ {
			switch t := stmt[k]; {
			case t.kind == tokPunct && t.text == "(":
				depth++
			case t.kind == tokPunct && t.text == ")":
				depth--
			case depth == 0 && t.is("ORDER") && order == closing:
				order = k
			}
		}
		at := stmt[i].pos
		with := made(at, "('{' || GROUP_CONCAT(COALESCE(array_element(")
		if nonNull {
			with = made(at, "('{' || GROUP_CONCAT(array_element(")
		}
		with = append(with, trimBlanks(stmt[open+1:order])...)
		if nonNull {
			with = append(with, made(at, ")")...)
		} else {
			with = append(with, made(at, "), 'NULL')")...)
		}
		if order < closing {
			with = append(append(with, made(at, " ")...), trimBlanks(stmt[order:closing])...)
		}
		with = append(with, made(stmt[closing].pos, " SEPARATOR ',') || '}')")...)
		stmt = splice(stmt, i, closing+1, with...)
	}
	return stmt
}

// rewriteAnyArrayValue rewrites x = ANY (array) where array is no list and
// no subquery.
func rewriteAnyArrayValue(stmt []token) []token {
	return rewriteArrayValueTest(stmt, func(op, quant token) bool {
		return op.text == "=" && (quant.is("ANY") || quant.is("SOME"))
	}, "IS NOT NULL")
}

// rewriteArrayValueTest turns x OP QUANT (array), where is(OP, QUANT) and
// array is an array value (no list, no subquery), into
// (array_position(array, x) TEST): = ANY is TEST IS NOT NULL, <> ALL IS NULL.
func rewriteArrayValueTest(stmt []token, is func(op, quant token) bool, test string) []token {
	for {
		w := words(stmt)
		at := -1
		for k := 0; k+3 < len(w); k++ {
			if is(stmt[w[k]], stmt[w[k+1]]) && stmt[w[k+2]].text == "(" &&
				!stmt[w[k+3]].is("SELECT") && !stmt[w[k+3]].is("ARRAY") && !stmt[w[k+3]].is("VALUES") && stmt[w[k+3]].text != "(" {
				at = k
				break
			}
		}
		if at < 0 {
			return stmt
		}
		start := operandStart(stmt, w[at])
		closing := matchingParen(stmt, w[at+2])
		if start < 0 || closing < 0 {
			return stmt
		}
		pos := stmt[w[at]].pos
		with := made(pos, "(array_position(")
		with = append(with, trimBlanks(stmt[w[at+2]+1:closing])...)
		with = append(with, made(pos, ", ")...)
		with = append(with, trimBlanks(stmt[start:w[at]])...)
		with = append(with, made(pos, ") "+test+")")...)
		stmt = splice(stmt, start, closing+1, with...)
	}
}

// rewriteSeriesFrom turns generate_series(...) or unnest(...) as a FROM
// item, which the parser cannot read, into a derived table of the select
// item:
// FROM generate_series(1, 3) [AS] s [(n)] is
// FROM (SELECT generate_series(1, 3) AS n) AS s, the column named as
// PostgreSQL names it (the alias, or generate_series without one).
func rewriteSeriesFrom(stmt []token, _ *dialectFacts) []token {
	// inFrom[d]: the clause at parenthesis depth d is a FROM, whose commas
	// separate FROM items.
	inFrom := map[int]bool{}
	depth := 0
	for i := 0; i < len(stmt); i++ {
		t := stmt[i]
		switch {
		case t.kind == tokPunct && t.text == "(":
			depth++
			inFrom[depth] = false
		case t.kind == tokPunct && t.text == ")":
			depth--
		case t.is("FROM"):
			inFrom[depth] = true
		case t.kind == tokWord && clauseWords[strings.ToLower(t.text)]:
			inFrom[depth] = false
		}
		if !(t.is("FROM") || t.is("JOIN") || t.kind == tokPunct && t.text == "," && inFrom[depth]) {
			continue
		}
		w := words(stmt[i+1:])
		if len(w) < 2 {
			continue
		}
		k := 0
		if len(w) > 3 && stmt[i+1+w[0]].is(PgCatalog) && stmt[i+1+w[1]].text == "." {
			k = 2
		}
		if !(stmt[i+1+w[k]].is("GENERATE_SERIES") || stmt[i+1+w[k]].is("UNNEST")) || k+1 >= len(w) || stmt[i+1+w[k+1]].text != "(" {
			continue
		}
		start, open := i+1+w[0], i+1+w[k+1]
		closing := matchingParen(stmt, open)
		if closing < 0 {
			return stmt
		}
		end := closing + 1
		alias, col := "", "generate_series"
		rest := words(stmt[end:])
		r := 0
		if r < len(rest) && stmt[end+rest[r]].is("AS") {
			r++
		}
		if r < len(rest) && (stmt[end+rest[r]].kind == tokWord && !operandStops[strings.ToLower(stmt[end+rest[r]].text)] &&
			!fromStops[strings.ToLower(stmt[end+rest[r]].text)] || stmt[end+rest[r]].kind == tokIdent) {
			alias, col = stmt[end+rest[r]].text, stmt[end+rest[r]].text
			end += rest[r] + 1
			r++
			// A column list: (n).
			if cw := words(stmt[end:]); len(cw) >= 3 && stmt[end+cw[0]].text == "(" && stmt[end+cw[2]].text == ")" {
				col = stmt[end+cw[1]].text
				end += cw[2] + 1
			}
		}
		if alias == "" {
			alias = strings.ToLower(stmt[i+1+w[k]].text)
			col = alias
		}
		pos := stmt[start].pos
		with := made(pos, "(SELECT ")
		with = append(with, stmt[start:closing+1]...)
		with = append(with, made(pos, " AS "+col+") AS "+alias)...)
		stmt = splice(stmt, start, end, with...)
	}
	return stmt
}

// clauseWords start the clauses after FROM (or before it).
var clauseWords = map[string]bool{"select": true, "where": true, "group": true, "having": true, "order": true,
	"limit": true, "on": true, "using": true, "window": true, "union": true, "intersect": true, "except": true,
	"offset": true, "fetch": true, "returning": true, "set": true, "values": true}

// fromStops are the words after a FROM item that are not its alias.
var fromStops = map[string]bool{"where": true, "group": true, "order": true, "limit": true, "join": true,
	"left": true, "right": true, "inner": true, "cross": true, "full": true, "natural": true, "on": true,
	"using": true, "union": true, "having": true, "window": true, "offset": true, "fetch": true}

// rewriteSubscripts turns an array element x[i] into array_get(x, i) (the
// element of the array's text form, as text).
func rewriteSubscripts(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if stmt[i].kind != tokPunct || stmt[i].text != "[" {
			continue
		}
		start := operandStart(stmt, i)
		if start < 0 || stmt[start].is("ARRAY") {
			continue
		}
		depth, closing := 0, -1
		for k := i; k < len(stmt) && closing < 0; k++ {
			switch stmt[k].text {
			case "[":
				depth++
			case "]":
				if depth--; depth == 0 {
					closing = k
				}
			}
		}
		if closing < 0 {
			return stmt
		}
		pos := stmt[i].pos
		with := made(pos, "array_get(")
		with = append(with, stmt[start:i]...)
		with = append(with, made(pos, ", ")...)
		with = append(with, stmt[i+1:closing]...)
		with = append(with, made(stmt[closing].pos, ")")...)
		stmt = splice(stmt, start, closing+1, with...)
	}
	return stmt
}

// rewriteRolePassword turns PostgreSQL's CREATE|ALTER USER|ROLE name [WITH]
// [LOGIN] [ENCRYPTED] PASSWORD 'pw' into MySQL's CREATE|ALTER USER name
// IDENTIFIED BY 'pw' (what psql's \password sends, the password hashed).
// ALTER USER name PASSWORD NULL removes the password: IDENTIFIED BY ”.
// CREATE ROLE name [WITH] [LOGIN] without a password is CREATE USER name.
func rewriteRolePassword(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	if n := len(w); n > 0 && stmt[w[n-1]].text == ";" {
		w = w[:n-1]
	}
	if len(w) < 4 || !(stmt[w[0]].is("CREATE") || stmt[w[0]].is("ALTER")) || !(stmt[w[1]].is("USER") || stmt[w[1]].is("ROLE")) {
		return stmt
	}
	k := 3
	for k < len(w) && (stmt[w[k]].is("WITH") || stmt[w[k]].is("LOGIN") || stmt[w[k]].is("ENCRYPTED")) {
		k++
	}
	if k == len(w) && stmt[w[0]].is("CREATE") && (k > 3 || stmt[w[1]].is("ROLE")) {
		return splice(stmt, w[0], w[k-1]+1, append(made(stmt[w[0]].pos, "CREATE USER "), stmt[w[2]])...)
	}
	if k+2 != len(w) || !stmt[w[k]].is("PASSWORD") || !(stmt[w[k+1]].kind == tokString || stmt[w[k+1]].is("NULL")) {
		return stmt
	}
	pw := stmt[w[k+1]]
	with := append(made(stmt[w[0]].pos, strings.ToUpper(stmt[w[0]].text)+" USER "), stmt[w[2]])
	with = append(with, made(stmt[w[3]].pos, " IDENTIFIED BY ")...)
	if pw.is("NULL") {
		with = append(with, made(pw.pos, "''")...)
	} else {
		with = append(with, pw)
	}
	return splice(stmt, w[0], w[k+1]+1, with...)
}

// rewriteArrayLiteral turns ARRAY[a, b] into array_build(a, b): the text
// form of the array of the values ({a,b}); ARRAY[] is '{}'.
func rewriteArrayLiteral(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("ARRAY") {
			continue
		}
		open := i + 1
		for open < len(stmt) && stmt[open].kind == tokSpace {
			open++
		}
		if open >= len(stmt) || stmt[open].text != "[" {
			continue
		}
		depth, closing := 0, -1
		for k := open; k < len(stmt) && closing < 0; k++ {
			switch stmt[k].text {
			case "[":
				depth++
			case "]":
				if depth--; depth == 0 {
					closing = k
				}
			}
		}
		if closing < 0 {
			return stmt
		}
		pos := stmt[i].pos
		if len(words(stmt[open+1:closing])) == 0 {
			stmt = splice(stmt, i, closing+1, made(pos, "'{}'")...)
			continue
		}
		with := made(pos, "array_build(")
		with = append(with, stmt[open+1:closing]...)
		with = append(with, made(stmt[closing].pos, ")")...)
		stmt = splice(stmt, i, closing+1, with...)
	}
	return stmt
}

// rewriteIntervalLiteral turns PostgreSQL's typed literals of the types
// Hummer holds as its own, TYPE 'text' (interval with no unit after the
// text, timestamptz, timestamp with time zone, bytea), into CAST('text' AS
// TYPE); MySQL's INTERVAL '3' DAY, which has a unit, stays.
func rewriteIntervalLiteral(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	for k := len(w) - 2; k >= 0; k-- {
		first, typ := k, ""
		switch t := stmt[w[k]]; {
		case t.is("INTERVAL"):
			if k+2 < len(w) && stmt[w[k+2]].kind == tokWord && mysqlIntervalUnits[strings.ToUpper(stmt[w[k+2]].text)] {
				continue
			}
			typ = "interval"
		case t.is("TIMESTAMPTZ") || t.is("BYTEA"):
			typ = strings.ToLower(t.text)
		case t.is("ZONE") && k >= 3 && stmt[w[k-1]].is("TIME") && stmt[w[k-2]].is("WITH") && stmt[w[k-3]].is("TIMESTAMP"):
			first, typ = k-3, "timestamptz"
		default:
			continue
		}
		if stmt[w[k+1]].kind != tokString {
			continue
		}
		pos := stmt[w[first]].pos
		with := append(made(pos, "CAST("), stmt[w[k+1]])
		with = append(with, made(pos, " AS "+typ+")")...)
		stmt = splice(stmt, w[first], w[k+1]+1, with...)
		w = words(stmt)
		k = min(k, len(w)-1)
	}
	return stmt
}

// columnType is a CREATE TABLE column's PostgreSQL type that the parser has
// no name for.
type columnType struct {
	name string // the column's, as written
	typ  types.Type
}

// pgColumnTypes are those types, by their names' words, and the MySQL type
// that stands for each in the parser's text. A bare type matches only
// without a parenthesised length or precision after it, which the parser
// reads itself.
var pgColumnTypes = map[string]struct {
	typ   types.Type
	mysql string
	bare  bool
}{
	"timestamptz": {types.TimestamptzType, "DATETIME", false}, "timestamp with time zone": {types.TimestamptzType, "DATETIME", false},
	"bytea": {types.ByteaType, "TEXT", false}, "interval": {types.IntervalType, "TEXT", false},
	"oid": {types.OidType, "BIGINT", false},
	// The parser reads these, as MySQL's types: REAL as DOUBLE, FLOAT as a
	// float4, where PostgreSQL's are float4 and float8 (FLOAT(p) both read
	// by p, alike); VARCHAR only with a length.
	"real": {types.Float4Type, "FLOAT", false}, "float": {types.Float64Type, "DOUBLE", true},
	"varchar": {types.VarcharType(0), "TEXT", true}, "character varying": {types.VarcharType(0), "TEXT", true},
}

// rewriteColumnTypes replaces the PostgreSQL column types of a CREATE TABLE
// that the parser cannot read (pgColumnTypes) by a type it can, telling
// the binder the column's type (dialectFacts.columnTypes).
func rewriteColumnTypes(stmt []token, f *dialectFacts) []token {
	w := words(stmt)
	if len(w) < 3 || !stmt[w[0]].is("CREATE") || !stmt[w[1]].is("TABLE") {
		return stmt
	}
	depth := 0
	for k := 2; k < len(w); k++ {
		t := stmt[w[k]]
		switch {
		case t.kind == tokPunct && t.text == "(":
			depth++
			continue
		case t.kind == tokPunct && t.text == ")":
			depth--
			continue
		}
		// A column's name: at depth 1, after ( or a comma.
		prev := stmt[w[k-1]]
		if depth != 1 || !(prev.text == "(" || prev.text == ",") || k+1 >= len(w) {
			continue
		}
		for n := 4; n >= 1; n-- {
			if k+n >= len(w) {
				continue
			}
			var ws []string
			for _, i := range w[k+1 : k+1+n] {
				ws = append(ws, strings.ToLower(stmt[i].text))
			}
			pg, ok := pgColumnTypes[strings.Join(ws, " ")]
			if !ok || pg.bare && k+n+1 < len(w) && stmt[w[k+n+1]].text == "(" {
				continue
			}
			f.columnTypes[t.pos] = columnType{name: unquoteName(t.text), typ: pg.typ}
			stmt = splice(stmt, w[k+1], w[k+n]+1, made(stmt[w[k+1]].pos, pg.mysql)...)
			w = words(stmt)
			break
		}
	}
	return stmt
}

// columnTypeFact returns the type the dialect layer read for the column
// name of the CREATE TABLE being bound, if it read one.
func (b *binder) columnTypeFact(name string) (types.Type, bool) {
	if b.facts.empty() {
		return types.Type{}, false
	}
	for off, c := range b.facts.columnTypes {
		if off >= b.start && off < b.start+len(b.text) && c.name == name {
			return c.typ, true
		}
	}
	return types.Type{}, false
}

package sql

import (
	"sort"
	"strings"
)

// The dialect layer: the TiDB parser reads MySQL's grammar, and users and
// their clients write PostgreSQL's and Flink's. Where they write a form the
// parser cannot read, this layer, in front of it, rewrites the statement's
// tokens (dialect_lex.go; never regular expressions over the raw text) into a
// form it reads. Every rewrite is listed below, in the order they run, with
// what users write and what the parser is given; dialect_test.go tests each.
//
// Positions stay the user's: every token keeps where it came from in the
// user's text (a token a rewrite made up, where the text it stands for
// starts), Parse maps the offsets of the parsed statements' nodes back
// through them, and a syntax error points at the user's own token.
var dialectRewrites = []dialectRewrite{
	{
		name:  "MATERIALIZED VIEW",
		users: "CREATE MATERIALIZED VIEW v AS ...; DROP MATERIALIZED VIEW v",
		reads: "CREATE VIEW v AS ...; DROP VIEW v (every Hummer view is materialised)",
		apply: rewriteMaterialized,
	},
	{
		name:  "SHOW name",
		users: "SHOW work_mem",
		reads: "SHOW VARIABLES LIKE 'work_mem'",
		apply: rewriteShowName,
	},
	{
		name:  "IS [NOT] DISTINCT FROM",
		users: "a IS DISTINCT FROM b; a IS NOT DISTINCT FROM b",
		reads: "a <=> b IS FALSE; a <=> b (<=> is MySQL's NULL-safe equality)",
		apply: rewriteDistinctFrom,
	},
}

// dialectRewrite is one rewrite: apply returns a statement's tokens
// rewritten (or the same tokens when the form is not there).
type dialectRewrite struct {
	name, users, reads string
	apply              func(stmt []token) []token
}

// dialected is SQL text as the dialect layer rewrote it.
type dialected struct {
	text   string  // what the parser reads
	toks   []token // its tokens
	starts []int   // where each token starts in text
}

// rewriteDialect runs every rewrite over each statement of sql.
func rewriteDialect(sql string) *dialected {
	toks := lex(sql)
	var out []token
	for len(toks) > 0 {
		end := statementEnd(toks)
		stmt := toks[:end]
		for _, r := range dialectRewrites {
			stmt = r.apply(stmt)
		}
		out = append(out, stmt...)
		toks = toks[end:]
	}
	d := &dialected{toks: out, starts: make([]int, len(out))}
	var b strings.Builder
	for i, t := range out {
		d.starts[i] = b.Len()
		b.WriteString(t.text)
	}
	d.text = b.String()
	return d
}

// statementEnd returns the length of the first statement of toks, its ';'
// included: the first ';' outside parentheses.
func statementEnd(toks []token) int {
	depth := 0
	for i, t := range toks {
		if t.kind != tokPunct {
			continue
		}
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		case ";":
			if depth <= 0 {
				return i + 1
			}
		}
	}
	return len(toks)
}

// origin maps an offset in the rewritten text to one in the user's: inside a
// token copied from it, the same place in that token; inside one a rewrite
// made, where the text it stands for starts.
func (d *dialected) origin(off int) int {
	if len(d.toks) == 0 {
		return off
	}
	i := sort.Search(len(d.starts), func(i int) bool { return d.starts[i] > off }) - 1
	if i < 0 {
		return 0
	}
	t := d.toks[i]
	if t.made {
		return t.pos
	}
	return t.pos + min(off-d.starts[i], len(t.text))
}

// identity reports whether no rewrite changed anything.
func (d *dialected) identity(sql string) bool { return d.text == sql }

// words returns the indexes of stmt's tokens that are not blanks.
func words(stmt []token) []int {
	var idx []int
	for i, t := range stmt {
		if t.kind != tokSpace {
			idx = append(idx, i)
		}
	}
	return idx
}

// made returns the tokens of text, marked as made by a rewrite for the user's
// text at pos.
func made(pos int, text string) []token {
	toks := lex(text)
	for i := range toks {
		toks[i].pos, toks[i].made = pos, true
	}
	return toks
}

// splice returns stmt with toks[i:j] replaced by with.
func splice(stmt []token, i, j int, with ...token) []token {
	out := make([]token, 0, len(stmt)-(j-i)+len(with))
	out = append(out, stmt[:i]...)
	out = append(out, with...)
	return append(out, stmt[j:]...)
}

// rewriteMaterialized drops MATERIALIZED from CREATE or DROP MATERIALIZED VIEW.
func rewriteMaterialized(stmt []token) []token {
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
// MySQL's SHOW VARIABLES LIKE 'name'.
func rewriteShowName(stmt []token) []token {
	w := words(stmt)
	if n := len(w); n > 0 && stmt[w[n-1]].text == ";" {
		w = w[:n-1]
	}
	if len(w) != 2 || !stmt[w[0]].is("SHOW") || stmt[w[1]].kind != tokWord || mysqlShow[strings.ToLower(stmt[w[1]].text)] {
		return stmt
	}
	name := stmt[w[1]]
	return splice(stmt, w[1], w[1]+1, made(name.pos, "VARIABLES LIKE '"+strings.ToLower(name.text)+"'")...)
}

// rewriteDistinctFrom turns a IS NOT DISTINCT FROM b into a <=> b and
// a IS DISTINCT FROM b into a <=> b IS FALSE, IS FALSE going after b's last
// token: <=>, IS and the comparisons are of one precedence, left to right, so
// (a <=> b) IS FALSE is how the parser groups it.
func rewriteDistinctFrom(stmt []token) []token {
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

// CopyQuery recognises COPY (query) TO STDOUT, which the parser cannot read
// and the wire server runs itself (streaming the query's changes), and
// returns the inner query's text. Like the rewrites it reads tokens: a
// parenthesis or keyword inside a string or comment of the query is text.
func CopyQuery(query string) (string, bool) {
	toks := lex(query)
	w := words(toks)
	if len(w) < 5 || !toks[w[0]].is("COPY") || toks[w[1]].text != "(" {
		return "", false
	}
	closing, depth := -1, 0
	for k := 1; k < len(w) && closing < 0; k++ {
		if t := toks[w[k]]; t.kind == tokPunct {
			switch t.text {
			case "(":
				depth++
			case ")":
				if depth--; depth == 0 {
					closing = k
				}
			}
		}
	}
	if closing < 0 {
		return "", false
	}
	rest := w[closing+1:]
	if n := len(rest); n > 0 && toks[rest[n-1]].text == ";" {
		rest = rest[:n-1]
	}
	if len(rest) != 2 || !toks[rest[0]].is("TO") || !toks[rest[1]].is("STDOUT") {
		return "", false
	}
	return query[toks[w[1]].pos+1 : toks[w[closing]].pos], true
}

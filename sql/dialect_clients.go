package sql

// The dialect layer's rewrites of forms the Python clients and ODBC send
// (SQLAlchemy's reflection queries, psqlODBC's), listed in dialect.go after
// the others.

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
)

// tidbReserved are the words the TiDB parser reads only as keywords.
var tidbReserved = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range parser.Keywords {
		if k.Reserved {
			m[strings.ToLower(k.Word)] = true
		}
	}
	return m
}()

// labelEnds are the tokens after which a word written after AS is an output
// column's label (or a table's alias) rather than the start of a query.
var labelEnds = map[string]bool{",": true, ")": true, ";": true, "from": true, "where": true,
	"group": true, "order": true, "having": true, "limit": true, "union": true, "join": true}

// rewriteKeywordLabels quotes a keyword the TiDB parser reserves when it is
// written after AS as a label, as PostgreSQL allows any keyword there
// (SQLAlchemy's "... ) AS DEFAULT," and "cons.conkey as key"): the label,
// folded to lower case as PostgreSQL folds it, becomes a quoted identifier.
// After AS inside CAST( or CONVERT( the word is a type and stays.
func rewriteKeywordLabels(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	for k := 0; k+1 < len(w); k++ {
		label := stmt[w[k+1]]
		if !stmt[w[k]].is("AS") || label.kind != tokWord || !tidbReserved[strings.ToLower(label.text)] {
			continue
		}
		if k+2 < len(w) && !labelEnds[strings.ToLower(stmt[w[k+2]].text)] {
			continue
		}
		if inCast(stmt, w, k) {
			continue
		}
		stmt[w[k+1]] = made(label.pos, `"`+strings.ToLower(label.text)+`"`)[0]
	}
	return stmt
}

// inCast reports whether the word w[k] is inside the parentheses of a
// CAST( or CONVERT(.
func inCast(stmt []token, w []int, k int) bool {
	depth := 0
	for j := k - 1; j >= 0; j-- {
		switch stmt[w[j]].text {
		case ")":
			depth++
		case "(":
			if depth == 0 {
				return j > 0 && (stmt[w[j-1]].is("CAST") || stmt[w[j-1]].is("CONVERT"))
			}
			depth--
		}
	}
	return false
}

// rewriteSubstringFor gives substring(s FOR n), PostgreSQL's form without a
// start (pgcli's \d: substring(pg_get_expr(...) for 128)), the start MySQL's
// grammar needs: substring(s FROM 1 FOR n).
func rewriteSubstringFor(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	for k := 0; k+1 < len(w); k++ {
		if !(stmt[w[k]].is("SUBSTRING") || stmt[w[k]].is("SUBSTR")) || stmt[w[k+1]].text != "(" {
			continue
		}
		depth, from, forAt := 0, false, -1
		for j := k + 1; j < len(w); j++ {
			t := stmt[w[j]]
			switch {
			case t.text == "(":
				depth++
			case t.text == ")":
				depth--
			case depth == 1 && t.is("FROM"):
				from = true
			case depth == 1 && t.is("FOR") && forAt < 0:
				forAt = j
			}
			if depth == 0 {
				break
			}
		}
		if from || forAt < 0 {
			continue
		}
		at := w[forAt]
		stmt = splice(stmt, at, at, made(stmt[at].pos, "FROM 1 ")...)
		w = words(stmt)
	}
	return stmt
}

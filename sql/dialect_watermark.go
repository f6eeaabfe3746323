package sql

import "strings"

// Flink's and RisingWave's watermark clause in CREATE TABLE:
//
//	CREATE TABLE bid (..., date_time TIMESTAMP,
//	  WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) ENGINE=...
//
// The parser reads no such clause. rewriteWatermark gives it a CHECK
// constraint in its place, named for the column, holding the expression:
//
//	CONSTRAINT `$watermark for date_time` CHECK (date_time - INTERVAL '4' SECOND)
//
// which the binder (bindWatermark) turns into the table's watermark; CHECK
// constraints of any other name stay refused. The expression's tokens are the
// user's, so errors in it point at the user's text.

// watermarkConstraint prefixes the name of the constraint a watermark clause
// is given to the parser as.
const watermarkConstraint = "$watermark for "

func rewriteWatermark(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	if len(w) < 3 || !stmt[w[0]].is("CREATE") || !stmt[w[1]].is("TABLE") {
		return stmt
	}
	for k := 2; k+3 < len(w); k++ {
		i := w[k]
		if !stmt[i].is("WATERMARK") || !stmt[w[k+1]].is("FOR") || !isName(stmt[w[k+2]]) || !stmt[w[k+3]].is("AS") {
			continue
		}
		// The clause is an element of the column list: a comma or the list's
		// opening parenthesis comes before it.
		if prev := stmt[w[k-1]]; prev.kind != tokPunct || prev.text != "," && prev.text != "(" {
			continue
		}
		col := stmt[w[k+2]]
		exprStart := w[k+3] + 1
		for exprStart < len(stmt) && stmt[exprStart].kind == tokSpace {
			exprStart++
		}
		end := elementEnd(stmt, exprStart)
		if end < 0 {
			return stmt
		}
		name := col.text
		if col.kind == tokIdent {
			name = strings.ReplaceAll(name[1:len(name)-1], name[:1]+name[:1], name[:1])
		}
		head := made(stmt[i].pos, "CONSTRAINT `"+watermarkConstraint+strings.ReplaceAll(name, "`", "``")+"` CHECK (")
		tail := made(stmt[end-1].pos+len(stmt[end-1].text), ")")
		out := append(append([]token{}, stmt[:i]...), head...)
		out = append(append(out, stmt[exprStart:end]...), tail...)
		out = append(out, stmt[end:]...)
		return rewriteWatermark(out, nil)
	}
	return stmt
}

// elementEnd returns the end of the list element that starts at from: the
// index of the first ',' or ')' outside parentheses after it, or -1.
func elementEnd(stmt []token, from int) int {
	depth := 0
	for k := from; k < len(stmt); k++ {
		if stmt[k].kind != tokPunct {
			continue
		}
		switch stmt[k].text {
		case "(":
			depth++
		case ")":
			if depth == 0 {
				return k
			}
			depth--
		case ",":
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

package sql

import "strings"

// rewriteFullJoin turns FULL [OUTER] JOIN into LEFT JOIN, telling the binder
// by the offset of the join's ON condition (the token after its ON). A FULL
// JOIN ... USING (a, b) or NATURAL FULL JOIN, which the parser would read with
// FULL as the left table's alias, is written LEFT JOIN ... ON TRUE, the binder
// told the USING columns (or NATURAL) by the offset of that TRUE.
func rewriteFullJoin(stmt []token, f *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("FULL") {
			continue
		}
		w := words(stmt[i:])
		k := 1
		if len(w) > k && stmt[i+w[k]].is("OUTER") {
			k++
		}
		if len(w) <= k || !stmt[i+w[k]].is("JOIN") {
			continue
		}
		join := i + w[k]
		first := i // where the join's words start: NATURAL, or FULL
		natural := false
		if p := prevWord(stmt, i); p >= 0 && stmt[p].is("NATURAL") {
			first, natural = p, true
		}
		// The ON or USING of this join: the first after it at its depth;
		// end, where its right table ends when it has neither.
		depth, on, using, end := 0, -1, -1, -1
		for j := join + 1; j < len(stmt) && end < 0; j++ {
			t := stmt[j]
			switch {
			case t.kind == tokPunct && t.text == "(":
				depth++
			case t.kind == tokPunct && t.text == ")":
				if depth--; depth < 0 {
					end = j
				}
			case depth > 0:
			case t.is("ON"):
				on, end = j, j
			case t.is("USING"):
				using, end = j, j
			case t.text == ";" || t.text == "," || t.kind == tokWord && joinEnds[strings.ToLower(t.text)]:
				end = j
			}
		}
		if end < 0 {
			end = len(stmt)
		}
		switch {
		case on >= 0 && !natural:
			cond := on + 1
			for cond < len(stmt) && stmt[cond].kind == tokSpace {
				cond++
			}
			if cond >= len(stmt) {
				continue
			}
			f.fullJoin[stmt[cond].pos] = true
		case using >= 0 && !natural:
			names, closing := usingNames(stmt, using)
			if closing < 0 {
				f.fullJoin[stmt[i].pos] = true // refused by the binder
				continue
			}
			pos := stmt[using].pos
			f.fullJoin[pos] = true
			f.joinUsing[pos] = joinUsing{names: names}
			stmt = splice(stmt, using, closing+1, made(pos, "ON TRUE")...)
		case on < 0 && using < 0 && natural:
			pos := stmt[first].pos
			f.fullJoin[pos] = true
			f.joinUsing[pos] = joinUsing{natural: true}
			last := end - 1
			for last > join && stmt[last].kind == tokSpace {
				last--
			}
			stmt = splice(stmt, last+1, last+1, made(pos, " ON TRUE")...)
		default:
			// A FULL JOIN the binder refuses: a fact no ON condition claims.
			f.fullJoin[stmt[i].pos] = true
			continue
		}
		stmt = splice(stmt, first, join, made(stmt[first].pos, "LEFT ")...)
	}
	return stmt
}

// joinEnds are the words that end a join's right table.
var joinEnds = map[string]bool{"join": true, "left": true, "right": true, "inner": true, "cross": true, "full": true,
	"natural": true, "straight_join": true, "where": true, "group": true, "having": true, "order": true, "limit": true,
	"offset": true, "fetch": true, "union": true, "except": true, "intersect": true, "window": true, "for": true}

// joinUsing is what a FULL JOIN's USING (names) or NATURAL said.
type joinUsing struct {
	names   []string
	natural bool
}

// usingNames reads the column list of the USING at stmt[using]: its names,
// lower case, and the index of its closing parenthesis (-1 if it is not a
// list of names).
func usingNames(stmt []token, using int) ([]string, int) {
	w := words(stmt[using:])
	if len(w) < 2 || stmt[using+w[1]].text != "(" {
		return nil, -1
	}
	open := using + w[1]
	closing := matchingParen(stmt, open)
	if closing < 0 {
		return nil, -1
	}
	var names []string
	for k, j := range words(stmt[open+1 : closing]) {
		t := stmt[open+1+j]
		switch {
		case k%2 == 1 && t.text == ",":
		case k%2 == 0 && t.kind == tokWord:
			names = append(names, strings.ToLower(t.text))
		case k%2 == 0 && t.kind == tokIdent && len(t.text) >= 2:
			names = append(names, strings.ToLower(t.text[1:len(t.text)-1]))
		default:
			return nil, -1
		}
	}
	if len(names) == 0 {
		return nil, -1
	}
	return names, closing
}

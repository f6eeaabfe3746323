package sql

// rewriteTemporalJoin reads Flink's processing-time lookup join,
//
//	FROM s JOIN t FOR SYSTEM_TIME AS OF s.proc_time AS d ON s.k = d.k
//
// as the join it is over a table that does not change while the query runs:
// FROM s JOIN t AS d ON s.k = d.k. The join reads t whole before the stream's
// rows probe it, each row joined to t as it is then, and never retracts what
// it emitted (Nexmark q13 enriches bids from a file so). The time after AS OF
// must be a column, qualified or not, or PROCTIME(), as Flink requires a time
// attribute; anything else is left for the parser to refuse where it is
// written. An event-time join against a versioned table (its rows as they were
// at each row's event time) is not this join and is not read.
func rewriteTemporalJoin(stmt []token, _ *dialectFacts) []token {
	w := words(stmt)
	for k := 0; k+4 < len(w); k++ {
		if !stmt[w[k]].is("FOR") || !stmt[w[k+1]].is("SYSTEM_TIME") || !stmt[w[k+2]].is("AS") || !stmt[w[k+3]].is("OF") {
			continue
		}
		end := timeAttributeEnd(stmt, w, k+4)
		if end < 0 {
			continue
		}
		// From FOR up to what follows the time.
		to := len(stmt)
		if end < len(w) {
			to = w[end]
		}
		stmt = splice(stmt, w[k], to)
		w = words(stmt)
	}
	return stmt
}

// timeAttributeEnd returns the index in w just past the time attribute that
// starts at w[i] (a name, a qualified name, or PROCTIME()), or -1 when there
// is none or more follows it than an alias, ON, USING, another join or the end
// of the FROM.
func timeAttributeEnd(stmt []token, w []int, i int) int {
	name := func(t token) bool { return t.kind == tokWord || t.kind == tokIdent }
	switch {
	case i+2 < len(w) && stmt[w[i]].is("PROCTIME") && stmt[w[i+1]].text == "(" && stmt[w[i+2]].text == ")":
		i += 3
	case i < len(w) && name(stmt[w[i]]):
		i++
		for i+1 < len(w) && stmt[w[i]].text == "." && name(stmt[w[i+1]]) {
			i += 2
		}
	default:
		return -1
	}
	if i < len(w) && !name(stmt[w[i]]) && stmt[w[i]].text != "," && stmt[w[i]].text != ")" && stmt[w[i]].text != ";" {
		return -1
	}
	return i
}

// rewriteAtTimeZone reads PostgreSQL's x AT TIME ZONE zone as its function
// timezone(zone, x), which the binder binds (bind_timezone.go). x is the
// primary before AT (operandStart: a name, a literal, a TIMESTAMP '...'
// literal, a call or a parenthesised expression),
// zone the primary after ZONE: a string, a parameter, a (qualified) name or
// a parenthesised expression. Anything else is left for the parser to
// refuse where it is written.
func rewriteAtTimeZone(stmt []token, _ *dialectFacts) []token {
	for k := 0; ; k++ {
		w := words(stmt)
		for ; k+3 < len(w); k++ {
			if stmt[w[k]].is("AT") && stmt[w[k+1]].is("TIME") && stmt[w[k+2]].is("ZONE") {
				break
			}
		}
		if k+3 >= len(w) {
			return stmt
		}
		start := operandStart(stmt, w[k])
		if start < 0 {
			continue
		}
		zone, end := w[k+3], primaryEnd(stmt, w, k+3)
		if end < 0 {
			continue
		}
		with := append(made(stmt[w[k]].pos, "timezone("), stmt[zone:end]...)
		with = append(with, made(stmt[w[k]].pos, ", ")...)
		with = append(with, stmt[start:prevWord(stmt, w[k])+1]...)
		with = append(with, made(stmt[w[k]].pos, ")")...)
		stmt = splice(stmt, start, end, with...)
		k = -1 // the next, from the start: indexes moved
	}
}

// primaryEnd returns the index in stmt just past the primary starting at
// stmt[w[k]]: a string, number or parameter, a (qualified) name, or a
// parenthesised expression; -1 when none starts there.
func primaryEnd(stmt []token, w []int, k int) int {
	t := stmt[w[k]]
	switch {
	case t.kind == tokString || t.kind == tokNumber || t.kind == tokParam:
		return w[k] + 1
	case t.kind == tokWord || t.kind == tokIdent:
		for k+2 < len(w) && stmt[w[k+1]].text == "." && (stmt[w[k+2]].kind == tokWord || stmt[w[k+2]].kind == tokIdent) {
			k += 2
		}
		return w[k] + 1
	case t.kind == tokPunct && t.text == "(":
		depth := 0
		for ; k < len(w); k++ {
			switch stmt[w[k]].text {
			case "(":
				depth++
			case ")":
				if depth--; depth == 0 {
					return w[k] + 1
				}
			}
		}
	}
	return -1
}

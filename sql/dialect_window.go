package sql

import (
	"strconv"
	"strings"
)

// Flink's windows, in the two forms users paste (dialect.go lists them):
//
//	GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), with TUMBLE_START(ts, ...) and
//	TUMBLE_END(ts, ...) in the select list;
//	FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND)), whose
//	rows are bid's with window_start and window_end.
//
// The parser reads neither INTERVAL inside a call's arguments nor TABLE(...)
// in FROM. rewriteWindows gives it calls of tumble_start(ts, n) and
// tumble_end(ts, n), n the window's size in microseconds: the group window
// groups by both (the same groups as by either), and the table function is a
// derived table adding both to the table's columns. HOP and CUMULATE table
// functions put a row in every window that holds it, a series of window
// starts (or ends) per row. A window's size may be written INTERVAL '10'
// SECOND, INTERVAL 10 SECOND, INTERVAL '10 SECONDS' or '10 SECOND'. A
// session window, GROUP BY k, SESSION(ts, gap) with SESSION_START and
// SESSION_END, groups by session_start(ts, gap) and session_end(ts, gap), a
// row's own session, which the planner's session_agg merges. The group
// window HOP(ts, slide, size) of a SELECT over one table becomes the HOP
// table function over it (rewriteHopGroup). The SESSION table function,
// TABLE(SESSION(TABLE t [PARTITION BY k, ...], DESCRIPTOR(ts), gap)), is the
// same per-row session as a derived table's window_start and window_end, so
// GROUP BY window_start, window_end, k is a session window by k. Its
// PARTITION BY keys are dropped: sessions are per the GROUP BY's other keys,
// which in Flink must include them.

func rewriteWindows(stmt []token, _ *dialectFacts) []token {
	if out, ok := rewriteHopGroup(stmt); ok {
		return rewriteWindows(out, nil)
	}
	for i := 0; i < len(stmt); i++ {
		t := stmt[i]
		if t.kind != tokWord {
			continue
		}
		open := nextWord(stmt, i+1)
		if open < 0 || stmt[open].text != "(" {
			continue
		}
		switch fn := strings.ToLower(t.text); {
		case fn == "table" && isTVF(stmt, open):
			if out, ok := rewriteWindowTable(stmt, i, open); ok {
				return rewriteWindows(out, nil)
			}
		case fn == "tumble" || fn == "tumble_start" || fn == "tumble_end" || fn == "session" || fn == "session_start" || fn == "session_end":
			args, closing, ok := callArgs(stmt, open)
			if !ok || len(args) != 2 {
				continue
			}
			size, ok := intervalMicros(args[1])
			if !ok {
				continue
			}
			ts := tokensText(args[0])
			var with string
			if fn == "tumble" || fn == "session" { // a group window: both bounds are the keys
				with = fn + "_start(" + ts + ", " + size + "), " + fn + "_end(" + ts + ", " + size + ")"
			} else {
				with = fn + "(" + ts + ", " + size + ")"
			}
			return rewriteWindows(splice(stmt, i, closing+1, made(t.pos, with)...), nil)
		}
	}
	return stmt
}

// isTVF reports whether TABLE( at open is a window table function: TABLE(TUMBLE(TABLE ...
func isTVF(stmt []token, open int) bool {
	fn := nextWord(stmt, open+1)
	if fn < 0 || !stmt[fn].is("TUMBLE") && !stmt[fn].is("HOP") && !stmt[fn].is("CUMULATE") && !stmt[fn].is("SESSION") {
		return false
	}
	p := nextWord(stmt, fn+1)
	if p < 0 || stmt[p].text != "(" {
		return false
	}
	tab := nextWord(stmt, p+1)
	return tab >= 0 && stmt[tab].is("TABLE")
}

// rewriteWindowTable rewrites TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))
// [AS alias] at stmt[at:].
func rewriteWindowTable(stmt []token, at, open int) ([]token, bool) {
	closing := matchingParen(stmt, open)
	fn := nextWord(stmt, open+1)
	fopen := nextWord(stmt, fn+1)
	args, fclose, ok := callArgs(stmt, fopen)
	kind := strings.ToLower(stmt[fn].text)
	if want := map[string]int{"tumble": 3, "hop": 4, "cumulate": 4, "session": 3}[kind]; !ok || closing < 0 || nextWord(stmt, fclose+1) != closing || len(args) != want {
		return nil, false
	}
	// TABLE t, or for a session TABLE t PARTITION BY k, ...
	if kind == "session" && len(args[0]) > 3 {
		if by := nextWord(args[0], 3); by < 0 || !args[0][by].is("PARTITION") {
			return nil, false
		}
		args[0] = args[0][:3]
	}
	if len(args[0]) != 3 || !args[0][0].is("TABLE") || !isName(args[0][2]) {
		return nil, false
	}
	table := args[0][2].text
	// DESCRIPTOR(ts)
	d := args[1]
	if len(d) < 4 || !d[0].is("DESCRIPTOR") || d[len(d)-1].text != ")" {
		return nil, false
	}
	ts := tokensText(trimBlanks(d[2 : len(d)-1]))
	var sizes []string
	for _, a := range args[2:] {
		size, ok := intervalMicros(a)
		if !ok {
			return nil, false
		}
		sizes = append(sizes, size)
	}
	alias := table
	end := closing + 1
	if k := nextWord(stmt, end); k >= 0 && (stmt[k].is("AS") || isName(stmt[k]) && !isKeywordAfterTable(stmt[k])) {
		alias = "" // the user's alias follows
	}
	var text string
	switch size := sizes[len(sizes)-1]; kind {
	case "tumble", "session":
		text = "(SELECT *, " + kind + "_start(" + ts + ", " + size + ") AS window_start, " + kind + "_end(" + ts + ", " + size + ") AS window_end FROM " + table + ")"
	case "hop": // HOP(TABLE t, DESCRIPTOR(ts), slide, size): a row in each window that holds it
		slide := sizes[0]
		text = "(SELECT *, window_start + INTERVAL " + size + " MICROSECOND AS window_end FROM (SELECT *, generate_series(hop_first(" + ts + ", " + slide + ", " + size +
			"), tumble_start(" + ts + ", " + slide + "), " + slide + ") AS window_start FROM " + table + ") AS " + table + ")"
	case "cumulate": // CUMULATE(TABLE t, DESCRIPTOR(ts), step, size): windows from each size's start, growing by step
		step := sizes[0]
		text = "(SELECT *, generate_series(cumulate_first_end(" + ts + ", " + step + ", " + size + "), tumble_end(" + ts + ", " + size + "), " + step +
			") AS window_end FROM (SELECT *, tumble_start(" + ts + ", " + size + ") AS window_start FROM " + table + ") AS " + table + ")"
	}
	if alias != "" {
		text += " AS " + alias
	}
	return splice(stmt, at, end, made(stmt[at].pos, text)...), true
}

// isKeywordAfterTable reports whether t, after a FROM item, starts the next
// clause rather than being the item's alias.
func isKeywordAfterTable(t token) bool {
	switch strings.ToLower(t.text) {
	case "where", "group", "having", "order", "limit", "join", "left", "right", "inner", "cross", "full", "natural", "on", "using", "union", "except", "intersect", "window", "offset", "fetch", "for":
		return true
	}
	return false
}

// nextWord returns the index of the first token from i that is not blank, or -1.
func nextWord(stmt []token, i int) int {
	for ; i < len(stmt); i++ {
		if stmt[i].kind != tokSpace {
			return i
		}
	}
	return -1
}

// callArgs splits the arguments of the call whose '(' is stmt[open], each
// without its surrounding blanks, and returns the index of its ')'.
func callArgs(stmt []token, open int) (args [][]token, closing int, ok bool) {
	if closing = matchingParen(stmt, open); closing < 0 {
		return nil, -1, false
	}
	return splitTopLevel(stmt, open+1, closing), closing, true
}

func tokensText(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return b.String()
}

// intervalUnits are the lengths of the interval units a window's size may
// be given in, in microseconds.
var intervalUnits = map[string]int64{"microsecond": 1, "millisecond": 1000, "second": 1e6, "minute": 60e6, "hour": 3600e6, "day": 86400e6}

// intervalMicros reads a window's size: INTERVAL '10' SECOND, INTERVAL 10
// SECOND, INTERVAL '10 SECONDS' or '10 SECOND', as a positive number of
// microseconds, in the text of a number.
func intervalMicros(toks []token) (string, bool) {
	var w []token
	for _, t := range toks {
		if t.kind != tokSpace {
			w = append(w, t)
		}
	}
	if len(w) > 0 && w[0].is("INTERVAL") {
		w = w[1:]
	}
	var num, unit string
	switch {
	case len(w) == 2 && (w[0].kind == tokString || w[0].kind == tokNumber) && w[1].kind == tokWord:
		num, unit = unquote(w[0]), w[1].text
	case len(w) == 1 && w[0].kind == tokString:
		f := strings.Fields(unquote(w[0]))
		if len(f) != 2 {
			return "", false
		}
		num, unit = f[0], f[1]
	default:
		return "", false
	}
	unit = strings.TrimSuffix(strings.ToLower(unit), "s")
	per, ok := intervalUnits[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || n <= 0 || n > (1<<62)/per {
		return "", false
	}
	return strconv.FormatInt(n*per, 10), true
}

// unquote returns a string literal's text, or a number's.
func unquote(t token) string {
	if t.kind != tokString || len(t.text) < 2 || t.text[0] != '\'' {
		return t.text
	}
	return strings.ReplaceAll(t.text[1:len(t.text)-1], "''", "'")
}

// rewriteHopGroup rewrites the group window HOP(ts, slide, size) of a SELECT
// over one table, GROUP BY ... HOP(ts, slide, size) with HOP_START(ts, ...)
// and HOP_END(ts, ...), as the HOP table function over that table grouped by
// its window_start and window_end: a row is in several hopping windows, so
// the FROM item itself must change. Only the outermost SELECT's GROUP BY is
// read, and only a FROM of one table (with or without an alias).
func rewriteHopGroup(stmt []token) ([]token, bool) {
	var from, group, hop = -1, -1, -1
	depth := 0
	for i, t := range stmt {
		switch {
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		case depth == 0 && t.is("FROM") && from < 0:
			from = i
		case depth == 0 && t.is("GROUP") && from >= 0:
			group = i
		case depth == 0 && group >= 0 && t.is("HOP") && hop < 0:
			if o := nextWord(stmt, i+1); o >= 0 && stmt[o].text == "(" {
				hop = i
			}
		}
	}
	if hop < 0 {
		return nil, false
	}
	args, closing, ok := callArgs(stmt, nextWord(stmt, hop+1))
	if !ok || len(args) != 3 {
		return nil, false
	}
	table := nextWord(stmt, from+1)
	if table < 0 || !isName(stmt[table]) || isKeywordAfterTable(stmt[table]) {
		return nil, false
	}
	// The FROM item is the one table: what follows is an alias, then a clause.
	k := nextWord(stmt, table+1)
	if k >= 0 && stmt[k].is("AS") {
		k = nextWord(stmt, k+1)
	}
	if k >= 0 && isName(stmt[k]) && !isKeywordAfterTable(stmt[k]) {
		k = nextWord(stmt, k+1)
	}
	if k < 0 || !(stmt[k].is("WHERE") || stmt[k].is("GROUP")) {
		return nil, false
	}
	ts := args[0]
	if n := len(ts); n >= 3 && ts[n-2].text == "." { // B.dateTime: the table's column
		ts = ts[n-1:]
	}
	tvf := "TABLE(HOP(TABLE " + stmt[table].text + ", DESCRIPTOR(" + tokensText(ts) + "), " + tokensText(args[1]) + ", " + tokensText(args[2]) + "))"
	out := append([]token{}, stmt[:hop]...)
	out = append(out, made(stmt[hop].pos, "window_start, window_end")...)
	out = append(out, stmt[closing+1:]...)
	out = splice(out, table, table+1, made(stmt[table].pos, tvf)...)
	// HOP_START(...) and HOP_END(...) are the window's bounds.
	for i := 0; i < len(out); i++ {
		if (out[i].is("HOP_START") || out[i].is("HOP_END")) && nextWord(out, i+1) >= 0 && out[nextWord(out, i+1)].text == "(" {
			end := matchingParen(out, nextWord(out, i+1))
			if end < 0 {
				return nil, false
			}
			name := "window_start"
			if out[i].is("HOP_END") {
				name = "window_end"
			}
			out = splice(out, i, end+1, made(out[i].pos, name)...)
		}
	}
	return out, true
}

package sql

import (
	"strconv"
	"strings"
)

// PostgreSQL's session commands, read by the dialect layer itself: SET's
// value lists, TO and TIME ZONE, RESET, DISCARD and DEALLOCATE have no MySQL
// spelling the parser could be given. rewriteSessionCommand reads the
// statement's tokens into a sessionCommand fact, keyed by the offset of the
// statement's first word, and gives the parser DO 0 in its place; the binder
// (bindSessionCommand) turns the fact into the statement.

// sessionCommand is one session command as the dialect layer read it.
type sessionCommand struct {
	// verb is SET, RESET, DISCARD or DEALLOCATE.
	verb string
	// name is SET's and RESET's parameter (lower case), DISCARD's object
	// (ALL, PLANS, SEQUENCES, TEMP) or DEALLOCATE's statement; "" with all.
	name string
	all  bool
	// local: SET LOCAL.
	local bool
	// values are SET's values as PostgreSQL flattens them: a string
	// literal's text, a bare word lower-cased, a quoted identifier as
	// written, a number as written with its sign; nil for DEFAULT.
	values []string
}

// sessionPlaceholder is what the parser reads in a session command's place.
const sessionPlaceholder = "DO 0"

// rewriteSessionCommand recognises a whole statement that is one of
//
//	SET [SESSION | LOCAL] name {TO | =} {value [, ...] | DEFAULT}
//	SET [SESSION | LOCAL] TIME ZONE {value | LOCAL | DEFAULT | INTERVAL '+hh:mm' [HOUR TO MINUTE]}
//	SET NAMES value   (client_encoding)
//	RESET {name | ALL | TIME ZONE | SESSION AUTHORIZATION | TRANSACTION ISOLATION LEVEL}
//	DISCARD {ALL | PLANS | SEQUENCES | TEMP | TEMPORARY}
//	DEALLOCATE [PREPARE] {name | ALL}
//
// where a value is a string literal, a number (signed or not), a word or a
// quoted identifier. Anything else is left to the parser: MySQL's SET forms
// (SET x = 1 + 1, SET @u = ...) and PostgreSQL's other SETs (SET TRANSACTION,
// SET ROLE).
func rewriteSessionCommand(stmt []token, f *dialectFacts) []token {
	w := words(stmt)
	if n := len(w); n > 0 && stmt[w[n-1]].text == ";" {
		w = w[:n-1]
	}
	if len(w) < 2 {
		return stmt
	}
	toks := make([]token, len(w))
	for i, k := range w {
		toks[i] = stmt[k]
	}
	cmd, ok := readSessionCommand(toks)
	if !ok {
		return stmt
	}
	first, last := toks[0], toks[len(toks)-1]
	f.session[first.pos] = cmd
	return splice(stmt, w[0], w[len(w)-1]+1, madeFor(first.pos, last.pos+len(last.text), sessionPlaceholder)...)
}

// readSessionCommand reads toks, a statement's words without its ';'.
func readSessionCommand(toks []token) (*sessionCommand, bool) {
	verb := strings.ToUpper(toks[0].text)
	rest := toks[1:]
	switch {
	case toks[0].kind != tokWord:
		return nil, false
	case verb == "SET":
		return readSet(rest)
	case verb == "RESET":
		cmd := &sessionCommand{verb: verb}
		if len(rest) == 1 && rest[0].is("ALL") {
			cmd.all = true
			return cmd, true
		}
		name, ok := readParamName(rest)
		cmd.name = name
		return cmd, ok
	case verb == "DISCARD" && len(rest) == 1:
		what := strings.ToUpper(rest[0].text)
		if what == "TEMPORARY" {
			what = "TEMP"
		}
		switch what {
		case "ALL", "PLANS", "SEQUENCES", "TEMP":
			return &sessionCommand{verb: verb, name: what}, rest[0].kind == tokWord
		}
	case verb == "DEALLOCATE":
		if len(rest) > 0 && rest[0].is("PREPARE") {
			rest = rest[1:]
		}
		if len(rest) != 1 {
			return nil, false
		}
		switch t := rest[0]; {
		case t.is("ALL"):
			return &sessionCommand{verb: verb, all: true}, true
		case t.kind == tokWord:
			return &sessionCommand{verb: verb, name: strings.ToLower(t.text)}, true
		case t.kind == tokIdent:
			return &sessionCommand{verb: verb, name: unquoteToken(t)}, true
		}
	}
	return nil, false
}

// readSet reads what follows SET.
func readSet(toks []token) (*sessionCommand, bool) {
	cmd := &sessionCommand{verb: "SET"}
	if len(toks) > 0 && (toks[0].is("SESSION") || toks[0].is("LOCAL")) {
		// SESSION AUTHORIZATION and SESSION CHARACTERISTICS are other statements.
		if len(toks) > 1 && (toks[1].is("AUTHORIZATION") || toks[1].is("CHARACTERISTICS")) {
			return nil, false
		}
		cmd.local = toks[0].is("LOCAL")
		toks = toks[1:]
	}
	var vals []token
	switch {
	case len(toks) >= 3 && toks[0].is("TIME") && toks[1].is("ZONE"):
		cmd.name, vals = "timezone", toks[2:]
		if len(vals) == 1 && (vals[0].is("LOCAL") || vals[0].is("DEFAULT")) {
			return cmd, true
		}
		if hours, ok := intervalZone(vals); ok {
			cmd.values = []string{hours}
			return cmd, true
		}
	case len(toks) >= 2 && toks[0].is("NAMES"):
		cmd.name, vals = "client_encoding", toks[1:]
	default:
		eq := -1
		for i, t := range toks {
			if t.is("TO") || t.text == "=" {
				eq = i
				break
			}
		}
		if eq < 1 || eq == len(toks)-1 {
			return nil, false
		}
		name, ok := readParamName(toks[:eq])
		if !ok {
			return nil, false
		}
		cmd.name, vals = name, toks[eq+1:]
		if len(vals) == 1 && vals[0].is("DEFAULT") {
			return cmd, true
		}
	}
	values, ok := readSetValues(vals)
	cmd.values = values
	return cmd, ok && len(values) > 0
}

// intervalZone reads SET TIME ZONE INTERVAL '+02:00' [HOUR TO MINUTE], the
// SQL standard's form, as the hours east of Greenwich it gives ("2"), which
// SET TIME ZONE 2 means too; ok is false for anything else.
func intervalZone(vals []token) (string, bool) {
	if len(vals) < 2 || !vals[0].is("INTERVAL") || vals[1].kind != tokString || vals[1].text[0] != '\'' {
		return "", false
	}
	if rest := vals[2:]; len(rest) != 0 && !(len(rest) == 3 && rest[0].is("HOUR") && rest[1].is("TO") && rest[2].is("MINUTE")) {
		return "", false
	}
	s := strings.TrimSpace(vals[1].text[1 : len(vals[1].text)-1])
	sign := 1.0
	if s != "" && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
	}
	h, m, _ := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if m == "" {
		mm, err2 = 0, nil
	}
	if err1 != nil || err2 != nil || mm < 0 || mm > 59 {
		return "", false
	}
	return strconv.FormatFloat(sign*(float64(hh)+float64(mm)/60), 'f', -1, 64), true
}

// readParamName reads a parameter's name: a word, a quoted identifier, or
// a custom one of two parts (myapp.tenant); the multi-word names of RESET
// are the parameters they stand for.
func readParamName(toks []token) (string, bool) {
	var ws []string
	for _, t := range toks {
		ws = append(ws, strings.ToUpper(t.text))
	}
	switch strings.Join(ws, " ") {
	case "TIME ZONE":
		return "timezone", true
	case "SESSION AUTHORIZATION":
		return "session_authorization", true
	case "TRANSACTION ISOLATION LEVEL":
		return "transaction_isolation", true
	}
	part := func(t token) (string, bool) {
		switch t.kind {
		case tokWord:
			return strings.ToLower(t.text), true
		case tokIdent:
			return unquoteToken(t), true
		}
		return "", false
	}
	switch len(toks) {
	case 1:
		return part(toks[0])
	case 3:
		a, ok1 := part(toks[0])
		b, ok2 := part(toks[2])
		return a + "." + b, ok1 && ok2 && toks[1].text == "."
	}
	return "", false
}

// readSetValues reads a comma-separated list of values, flattening each as
// PostgreSQL does (sessionCommand.values); ok is false if toks are not one.
func readSetValues(toks []token) (values []string, ok bool) {
	for i := 0; i < len(toks); i++ {
		if len(values) > 0 {
			if toks[i].text != "," || i+1 == len(toks) {
				return nil, false
			}
			i++
		}
		t := toks[i]
		sign := ""
		if (t.text == "-" || t.text == "+") && i+1 < len(toks) && toks[i+1].kind == tokNumber {
			if t.text == "-" {
				sign = "-"
			}
			i++
			t = toks[i]
		}
		switch t.kind {
		case tokNumber:
			values = append(values, sign+t.text)
		case tokWord:
			values = append(values, strings.ToLower(t.text))
		case tokIdent, tokString:
			if t.text[0] != '\'' && t.text[0] != '"' {
				return nil, false // E'...', X'...', `x`: not PostgreSQL's plain forms
			}
			values = append(values, unquoteToken(t))
		default:
			return nil, false
		}
	}
	return values, true
}

// unquoteToken returns the text of a quoted string or identifier token:
// without its quotes, a doubled quote inside read as one.
func unquoteToken(t token) string {
	q := t.text[:1]
	s := t.text[1:]
	s = strings.TrimSuffix(s, q)
	return strings.ReplaceAll(s, q+q, q)
}

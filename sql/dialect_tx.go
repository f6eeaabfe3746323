package sql

import (
	"strconv"
	"strings"
)

// The dialect layer's transaction and cursor statements (dialect.go lists
// them): each is a whole statement, recognised by its first word.

// cursorFact is a FETCH, MOVE or CLOSE the dialect layer read, or the error
// to answer it with (a direction Hummer's cursors cannot go).
type cursorFact struct {
	stmt Statement
	err  *Error
}

// stmtWords returns the indexes of stmt's words (words), without a final ';'.
func stmtWords(stmt []token) []int {
	w := words(stmt)
	if n := len(w); n > 0 && stmt[w[n-1]].text == ";" {
		w = w[:n-1]
	}
	return w
}

// isName reports whether t can be a cursor's or savepoint's name.
func isName(t token) bool { return t.kind == tokWord || t.kind == tokIdent }

// quotedName is name as a quoted identifier, so that the parser keeps it as
// it is (identText folded it already).
func quotedName(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// rewriteTransaction writes PostgreSQL's transaction statements as the forms
// the parser reads: BEGIN [WORK|TRANSACTION] [modes] and START TRANSACTION
// [modes] as START TRANSACTION [READ ONLY] (the isolation levels and
// [NOT] DEFERRABLE are checked and dropped), END and ABORT as COMMIT and
// ROLLBACK, WORK and TRANSACTION after them dropped, RELEASE s as RELEASE
// SAVEPOINT s. Savepoint names are folded to lower case unless quoted, as
// PostgreSQL folds identifiers, and given to the parser quoted.
func rewriteTransaction(stmt []token, _ *dialectFacts) []token {
	w := stmtWords(stmt)
	if len(w) == 0 {
		return stmt
	}
	first := stmt[w[0]]
	word := func(k int) token {
		if k < len(w) {
			return stmt[w[k]]
		}
		return token{}
	}
	last := stmt[w[len(w)-1]]
	replace := func(text string) []token {
		return splice(stmt, w[0], w[len(w)-1]+1, madeFor(first.pos, last.pos+len(last.text), text)...)
	}
	switch {
	case first.is("BEGIN") || first.is("START") && word(1).is("TRANSACTION"):
		k := 1
		if first.is("START") || word(1).is("WORK") || word(1).is("TRANSACTION") {
			k = 2
		}
		if len(w) == 1 {
			return stmt
		}
		readOnly, ok := transactionModes(stmt, w[k:])
		if !ok {
			return stmt // MySQL's forms (WITH CONSISTENT SNAPSHOT), or an error for the parser
		}
		if readOnly {
			return replace("START TRANSACTION READ ONLY")
		}
		return replace("START TRANSACTION")
	case first.is("COMMIT") || first.is("END") || first.is("ROLLBACK") || first.is("ABORT"):
		verb := "COMMIT"
		if first.is("ROLLBACK") || first.is("ABORT") {
			verb = "ROLLBACK"
		}
		k := 1
		if word(1).is("WORK") || word(1).is("TRANSACTION") {
			k = 2
		}
		if verb == "ROLLBACK" && word(k).is("TO") {
			n := k + 1
			if word(n).is("SAVEPOINT") {
				n++
			}
			if n != len(w)-1 || !isName(word(n)) || first.is("ABORT") {
				return stmt
			}
			return replace("ROLLBACK TO " + quotedName(identText(word(n))))
		}
		if k == 1 && (first.is("COMMIT") || first.is("ROLLBACK")) {
			return stmt // COMMIT, ROLLBACK [AND [NO] CHAIN]: the parser's own
		}
		var rest strings.Builder
		for _, i := range w[k:] {
			rest.WriteString(" " + stmt[i].text)
		}
		return replace(verb + rest.String())
	case first.is("SAVEPOINT"):
		if len(w) != 2 || !isName(word(1)) {
			return stmt
		}
		return replace("SAVEPOINT " + quotedName(identText(word(1))))
	case first.is("RELEASE"):
		n := 1
		if word(1).is("SAVEPOINT") {
			n = 2
		}
		if n != len(w)-1 || !isName(word(n)) {
			return stmt
		}
		return replace("RELEASE SAVEPOINT " + quotedName(identText(word(n))))
	}
	return stmt
}

// transactionModes reads BEGIN's and START TRANSACTION's modes, the words at
// idx: ISOLATION LEVEL {SERIALIZABLE | REPEATABLE READ | READ COMMITTED |
// READ UNCOMMITTED}, READ WRITE, READ ONLY, [NOT] DEFERRABLE, with or without
// commas between them. ok is false if something else is there.
func transactionModes(stmt []token, idx []int) (readOnly, ok bool) {
	at := func(k int, word string) bool { return k < len(idx) && stmt[idx[k]].is(word) }
	for k := 0; k < len(idx); {
		switch {
		case stmt[idx[k]].text == "," && k > 0:
			k++
		case at(k, "ISOLATION") && at(k+1, "LEVEL"):
			switch {
			case at(k+2, "SERIALIZABLE"):
				k += 3
			case at(k+2, "REPEATABLE") && at(k+3, "READ"),
				at(k+2, "READ") && (at(k+3, "COMMITTED") || at(k+3, "UNCOMMITTED")):
				k += 4
			default:
				return false, false
			}
		case at(k, "READ") && at(k+1, "ONLY"):
			readOnly, k = true, k+2
		case at(k, "READ") && at(k+1, "WRITE"):
			readOnly, k = false, k+2
		case at(k, "DEFERRABLE"):
			k++
		case at(k, "NOT") && at(k+1, "DEFERRABLE"):
			k += 2
		default:
			return false, false
		}
	}
	return readOnly, true
}

// rewriteCursor takes the cursor statements out of the parser's way:
// DECLARE name [options] CURSOR [WITH|WITHOUT HOLD] FOR query leaves only the
// query, the cursor told to the binder at the query's offset; FETCH, MOVE
// and CLOSE, which the parser has no statement like, become DO 0, the
// statement told to the binder at the statement's offset.
func rewriteCursor(stmt []token, f *dialectFacts) []token {
	w := stmtWords(stmt)
	if len(w) < 2 {
		return stmt
	}
	first := stmt[w[0]]
	switch {
	case first.is("DECLARE"):
		return rewriteDeclare(stmt, w, f)
	case first.is("FETCH") || first.is("MOVE"):
		fact, ok := readFetch(stmt, w)
		if !ok {
			return stmt
		}
		f.cursors[first.pos] = fact
	case first.is("CLOSE"):
		if len(w) != 2 || !isName(stmt[w[1]]) {
			return stmt
		}
		c := &CloseCursor{Name: identText(stmt[w[1]])}
		if stmt[w[1]].is("ALL") {
			c = &CloseCursor{All: true}
		}
		f.cursors[first.pos] = cursorFact{stmt: c}
	default:
		return stmt
	}
	last := stmt[w[len(w)-1]]
	return splice(stmt, w[0], w[len(w)-1]+1, madeFor(first.pos, last.pos+len(last.text), "DO 0")...)
}

func rewriteDeclare(stmt []token, w []int, f *dialectFacts) []token {
	if !isName(stmt[w[1]]) {
		return stmt
	}
	d := &DeclareCursor{Name: identText(stmt[w[1]])}
	k := 2
	at := func(word string) bool { return k < len(w) && stmt[w[k]].is(word) }
	for ; !at("CURSOR"); k++ {
		switch {
		case at("BINARY"):
			d.Binary = true
		case at("ASENSITIVE"), at("INSENSITIVE"):
		case at("SCROLL"):
			d.Scroll = true
		case at("NO"):
			if k++; !at("SCROLL") {
				return stmt
			}
		default:
			return stmt
		}
	}
	k++ // CURSOR
	switch {
	case at("WITH") || at("WITHOUT"):
		d.Hold = at("WITH")
		if k++; !at("HOLD") {
			return stmt
		}
		k++
	}
	if !at("FOR") || k+1 >= len(w) {
		return stmt
	}
	f.declares[stmt[w[k+1]].pos] = d
	return splice(stmt, w[0], w[k]+1)
}

// readFetch reads FETCH|MOVE [direction] [FROM|IN] name, w its words, with
// every direction PostgreSQL has (sql.FetchDir); the session answers those
// a cursor cannot take.
func readFetch(stmt []token, w []int) (cursorFact, bool) {
	first := stmt[w[0]]
	n := len(w)
	if !isName(stmt[w[n-1]]) {
		return cursorFact{}, false
	}
	fetch := &Fetch{Name: identText(stmt[w[n-1]]), Count: 1, Move: first.is("MOVE")}
	dir := w[1 : n-1]
	if k := len(dir); k > 0 && (stmt[dir[k-1]].is("FROM") || stmt[dir[k-1]].is("IN")) {
		dir = dir[:k-1]
	}
	at := func(k int, word string) bool { return k < len(dir) && stmt[dir[k]].is(word) }
	// count reads a signed integer at dir[k:], the rest of the direction.
	count := func(k int) (int64, bool) {
		var text string
		switch rest := dir[k:]; {
		case len(rest) == 1:
			text = stmt[rest[0]].text
		case len(rest) == 2 && (stmt[rest[0]].text == "-" || stmt[rest[0]].text == "+"):
			text = stmt[rest[0]].text + stmt[rest[1]].text
		default:
			return 0, false
		}
		v, err := strconv.ParseInt(text, 10, 64)
		return v, err == nil
	}
	switch {
	case len(dir) == 0, len(dir) == 1 && (at(0, "NEXT") || at(0, "FORWARD")):
	case len(dir) == 1 && at(0, "ALL"), len(dir) == 2 && at(0, "FORWARD") && at(1, "ALL"):
		fetch.Count = FetchAll
	case len(dir) == 1 && (at(0, "PRIOR") || at(0, "BACKWARD")):
		fetch.Dir = FetchBackward
	case len(dir) == 2 && at(0, "BACKWARD") && at(1, "ALL"):
		fetch.Dir, fetch.Count = FetchBackward, FetchAll
	case len(dir) == 1 && at(0, "FIRST"):
		fetch.Dir = FetchAbsolute
	case len(dir) == 1 && at(0, "LAST"):
		fetch.Dir, fetch.Count = FetchAbsolute, -1
	case at(0, "ABSOLUTE") || at(0, "RELATIVE"):
		v, ok := count(1)
		if !ok {
			return cursorFact{}, false
		}
		fetch.Dir, fetch.Count = FetchAbsolute, v
		if at(0, "RELATIVE") {
			fetch.Dir = FetchRelative
		}
	default:
		k := 0
		if at(0, "FORWARD") || at(0, "BACKWARD") {
			k = 1
		}
		v, ok := count(k)
		if !ok {
			return cursorFact{}, false
		}
		if at(0, "BACKWARD") {
			v = -v
		}
		switch {
		case v < 0:
			fetch.Dir, fetch.Count = FetchBackward, -v
		case v == 0:
			fetch.Dir, fetch.Count = FetchRelative, 0
		default:
			fetch.Count = v
		}
	}
	return cursorFact{stmt: fetch}, true
}

// declareFact returns the cursor declared around the statement being bound,
// if any: the one whose query starts inside the statement's text (which may
// begin with the blanks before it).
func (b *binder) declareFact() (*DeclareCursor, bool) {
	if b.facts.empty() {
		return nil, false
	}
	for off, d := range b.facts.declares {
		if off >= b.start && off < b.start+len(b.text) {
			b.markUsed(off)
			return d, true
		}
	}
	return nil, false
}

// cursorFact returns the FETCH, MOVE or CLOSE the statement being bound was
// written as, if it was one.
func (b *binder) cursorFact() (cursorFact, bool) {
	if b.facts.empty() {
		return cursorFact{}, false
	}
	for off, c := range b.facts.cursors {
		if off >= b.start && off < b.start+len(b.text) {
			return c, true
		}
	}
	return cursorFact{}, false
}

func (b *binder) markUsed(off int) {
	if b.used == nil {
		b.used = map[int]bool{}
	}
	b.used[off] = true
}

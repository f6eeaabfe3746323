package sql

import (
	"strconv"
	"strings"
)

// The LIMIT, OFFSET and FETCH FIRST clauses as PostgreSQL reads them (the
// dialect layer's rewrite "LIMIT, OFFSET, FETCH FIRST"). PostgreSQL takes
// LIMIT {n | ALL | $n}, OFFSET {n | $n} [ROW | ROWS] and FETCH {FIRST | NEXT}
// [n | $n] {ROW | ROWS} ONLY in any order; MySQL's grammar takes only
// LIMIT {n | ?} [OFFSET {n | ?}] and FETCH FIRST n ROWS ONLY alone. The
// rewrite puts a clause group into MySQL's form; a $n becomes a ? marker,
// whose number the binder is told (dialectFacts.params).

// noLimit is the LIMIT of an OFFSET without one: MySQL's idiom for "all the
// rows" (the binder takes a count past int64's range as no limit).
const noLimit = "18446744073709551615"

// limitClause is one group of LIMIT, OFFSET and FETCH clauses: the tokens of
// the count and the offset (nil when not written; a LIMIT ALL has no count).
type limitClause struct {
	count, offset *token
	limit, fetch  bool // LIMIT (with ALL) or FETCH was written
	// mysql: the group is already in a form the parser reads.
	mysql bool
}

// rewriteLimit rewrites each LIMIT, OFFSET and FETCH clause group the parser
// cannot read (see above) into LIMIT count OFFSET offset.
func rewriteLimit(stmt []token, f *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		t := stmt[i]
		if !(t.is("LIMIT") || t.is("OFFSET") || t.is("FETCH")) || i > 0 && stmt[i-1].text == "." {
			continue
		}
		c, end := readLimitClause(stmt, i)
		if end < 0 {
			continue
		}
		if c.mysql {
			i = end - 1
			continue
		}
		var with []token
		with = append(with, made(t.pos, "LIMIT ")...)
		if c.count != nil {
			with = append(with, limitValue(*c.count, f))
		} else {
			with = append(with, made(t.pos, noLimit)...)
		}
		if c.offset != nil {
			with = append(with, made(t.pos, " OFFSET ")...)
			with = append(with, limitValue(*c.offset, f))
		}
		stmt = splice(stmt, i, end, with...)
		i += len(with) - 1
	}
	return stmt
}

// limitValue is the token the parser reads for a count or offset: a number as
// it is, a $n as a ? marker at its place, with its number told the binder.
func limitValue(v token, f *dialectFacts) token {
	if v.kind != tokParam {
		return v
	}
	n, err := strconv.Atoi(v.text[1:])
	if err != nil {
		return v // past int's range: let the parser refuse it
	}
	f.params[v.pos] = n
	return token{kind: tokPunct, text: "?", pos: v.pos, made: true}
}

// readLimitClause reads the clause group starting at stmt[i] and returns it
// with the index after it, or end -1 if it is not one this rewrite reads.
func readLimitClause(stmt []token, i int) (c limitClause, end int) {
	next := func(i int) int {
		for i < len(stmt) && stmt[i].kind == tokSpace {
			i++
		}
		return i
	}
	value := func(i int) *token {
		if i < len(stmt) && (stmt[i].kind == tokNumber || stmt[i].kind == tokParam) {
			return &stmt[i]
		}
		return nil
	}
	rows := func(i int) bool { return i < len(stmt) && (stmt[i].is("ROW") || stmt[i].is("ROWS")) }
	var order []string
	params := false
	end = -1
	for {
		k := next(i)
		if k >= len(stmt) {
			break
		}
		kw := strings.ToUpper(stmt[k].text)
		switch {
		case stmt[k].is("LIMIT") && !c.limit && !c.fetch:
			j := next(k + 1)
			if j < len(stmt) && stmt[j].is("ALL") {
				kw = "LIMIT ALL"
			} else if c.count = value(j); c.count == nil {
				return c, -1
			}
			c.limit, i = true, j+1
		case stmt[k].is("OFFSET") && c.offset == nil:
			j := next(k + 1)
			if c.offset = value(j); c.offset == nil {
				return c, -1
			}
			i = j + 1
			if r := next(i); rows(r) {
				i = r + 1
				kw = "OFFSET ROWS"
			}
		case stmt[k].is("FETCH") && !c.limit && !c.fetch:
			j := next(k + 1)
			if j >= len(stmt) || !(stmt[j].is("FIRST") || stmt[j].is("NEXT")) {
				return c, -1
			}
			j = next(j + 1)
			if c.count = value(j); c.count != nil {
				j = next(j + 1)
			} else {
				one := token{kind: tokNumber, text: "1", pos: stmt[k].pos, made: true}
				c.count = &one
			}
			if !rows(j) {
				return c, -1
			}
			if j = next(j + 1); j >= len(stmt) || !stmt[j].is("ONLY") {
				return c, -1 // WITH TIES and the like: for the parser to refuse
			}
			c.fetch, i = true, j+1
		default:
			if end < 0 {
				return c, -1
			}
			c.mysql = !params && mysqlLimitForm(order)
			return c, end
		}
		order = append(order, kw)
		if v := c.count; v != nil && v.kind == tokParam || c.offset != nil && c.offset.kind == tokParam {
			params = true
		}
		end = i
	}
	if end >= 0 {
		c.mysql = !params && mysqlLimitForm(order)
	}
	return c, end
}

// mysqlLimitForm reports whether clauses written in this order (without
// parameters) are a form the parser reads itself: LIMIT n [OFFSET n], or
// FETCH alone.
func mysqlLimitForm(order []string) bool {
	switch strings.Join(order, " ") {
	case "LIMIT", "LIMIT OFFSET", "FETCH":
		return true
	}
	return false
}

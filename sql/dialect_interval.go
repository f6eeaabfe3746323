package sql

import "strings"

// pgIntervalUnits are the units PostgreSQL reads in an interval literal's
// text, singular, plural and abbreviated, as the unit words MySQL's grammar
// reads after INTERVAL n.
var pgIntervalUnits = map[string]string{
	"microsecond": "MICROSECOND", "microseconds": "MICROSECOND", "us": "MICROSECOND", "usec": "MICROSECOND", "usecs": "MICROSECOND",
	"second": "SECOND", "seconds": "SECOND", "sec": "SECOND", "secs": "SECOND", "s": "SECOND",
	"minute": "MINUTE", "minutes": "MINUTE", "min": "MINUTE", "mins": "MINUTE", "m": "MINUTE",
	"hour": "HOUR", "hours": "HOUR", "hr": "HOUR", "hrs": "HOUR", "h": "HOUR",
	"day": "DAY", "days": "DAY", "d": "DAY",
	"week": "WEEK", "weeks": "WEEK", "w": "WEEK",
	"month": "MONTH", "months": "MONTH", "mon": "MONTH", "mons": "MONTH",
	"year": "YEAR", "years": "YEAR", "yr": "YEAR", "yrs": "YEAR", "y": "YEAR",
}

// rewriteIntervalLiterals turns PostgreSQL's INTERVAL '3 days' (the quantity
// and one unit inside the string) into INTERVAL '3' DAY, which the parser
// reads wherever MySQL takes an interval (intervalOperand): date
// arithmetic, DATE_ADD's argument, a window frame's RANGE BETWEEN INTERVAL
// '1' DAY PRECEDING. An interval of several units ('1 day 2 hours'), or one
// standing alone, is left to rewriteIntervalLiteral: an interval value.
func rewriteIntervalLiterals(stmt []token, _ *dialectFacts) []token {
	for i := 0; i < len(stmt); i++ {
		if !stmt[i].is("INTERVAL") {
			continue
		}
		w := words(stmt[i:])
		if len(w) < 2 || stmt[i+w[1]].kind != tokString || !strings.HasPrefix(stmt[i+w[1]].text, "'") {
			continue
		}
		lit := i + w[1]
		if len(w) > 2 && stmt[i+w[2]].kind == tokWord {
			if _, unit := mysqlIntervalUnits[strings.ToUpper(stmt[i+w[2]].text)]; unit {
				continue // INTERVAL '90' DAY already
			}
		}
		if !intervalOperand(stmt, i, lit) {
			continue // a value of its own: rewriteIntervalLiteral's interval
		}
		f := strings.Fields(unquote(stmt[lit]))
		if len(f) != 2 {
			continue
		}
		unit, ok := pgIntervalUnits[strings.ToLower(f[1])]
		if !ok || strings.Trim(f[0], "+-0123456789") != "" {
			continue
		}
		stmt = splice(stmt, lit, lit+1, made(stmt[lit].pos, "'"+f[0]+"' "+unit)...)
	}
	return stmt
}

// intervalOperand reports whether INTERVAL at i, its string at lit, stands
// where MySQL's grammar takes an interval: beside + or - (date arithmetic),
// before PRECEDING or FOLLOWING (a frame's bound), or as a call's last
// argument (DATE_ADD(d, INTERVAL ...)). Elsewhere, a select item say, it is
// a value, which PostgreSQL's interval type holds.
// Interval + interval is not date arithmetic: both are values then.
func intervalOperand(stmt []token, i, lit int) bool {
	if p := prevWord(stmt, i); p >= 0 && (stmt[p].text == "+" || stmt[p].text == "-") && !intervalBefore(stmt, p) && !unaryAt(stmt, p) {
		return true
	}
	n := nextWord(stmt, lit+1)
	if n < 0 {
		return false
	}
	switch t := stmt[n]; {
	case (t.text == "+" || t.text == "-") && !intervalAfter(stmt, n):
		return true
	case t.is("PRECEDING") || t.is("FOLLOWING"):
		return true
	case t.text == ")":
		p := prevWord(stmt, i)
		return p >= 0 && stmt[p].text == ","
	}
	return false
}

// intervalBefore reports whether the operand just before the operator at p
// is an interval literal: INTERVAL 'x', or INTERVAL 'n' UNIT as rewritten.
func intervalBefore(stmt []token, p int) bool {
	q := prevWord(stmt, p)
	if q >= 0 && stmt[q].kind == tokWord && mysqlIntervalUnits[strings.ToUpper(stmt[q].text)] {
		q = prevWord(stmt, q)
	}
	if q < 0 || stmt[q].kind != tokString {
		return false
	}
	q = prevWord(stmt, q)
	return q >= 0 && stmt[q].is("INTERVAL")
}

// unaryAt reports whether the + or - at p is a sign, not an operator: it
// follows no operand (nothing, an operator, a comma, an opening
// parenthesis, or a keyword such as SELECT).
func unaryAt(stmt []token, p int) bool {
	q := prevWord(stmt, p)
	if q < 0 {
		return true
	}
	switch t := stmt[q]; t.kind {
	case tokPunct:
		return t.text != ")"
	case tokWord:
		return sqlKeywordsBeforeValue[strings.ToUpper(t.text)]
	}
	return false
}

// sqlKeywordsBeforeValue are the keywords after which a - is a sign.
var sqlKeywordsBeforeValue = map[string]bool{"SELECT": true, "WHERE": true, "AND": true, "OR": true, "NOT": true,
	"THEN": true, "ELSE": true, "WHEN": true, "BY": true, "ON": true, "HAVING": true, "DISTINCT": true, "ALL": true,
	"RETURN": true, "VALUES": true, "IS": true, "IN": true, "BETWEEN": true, "LIKE": true}

// intervalAfter reports whether the operand just after the operator at n is
// an interval literal.
func intervalAfter(stmt []token, n int) bool {
	q := nextWord(stmt, n+1)
	return q >= 0 && stmt[q].is("INTERVAL")
}

// mysqlIntervalUnits are the unit words MySQL's grammar reads after
// INTERVAL n.
var mysqlIntervalUnits = map[string]bool{"MICROSECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true,
	"WEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true, "SECOND_MICROSECOND": true, "MINUTE_MICROSECOND": true,
	"MINUTE_SECOND": true, "HOUR_MICROSECOND": true, "HOUR_SECOND": true, "HOUR_MINUTE": true, "DAY_MICROSECOND": true,
	"DAY_SECOND": true, "DAY_MINUTE": true, "DAY_HOUR": true, "YEAR_MONTH": true}

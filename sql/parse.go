package sql

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"

	// The parser needs a driver for literal values; the test driver is the small
	// one, with no dependency on the rest of TiDB.
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// sqlMode makes the MySQL dialect read three things as PostgreSQL clients write
// them: "x" is an identifier (ANSI_QUOTES), a || b is concatenation
// (PIPES_AS_CONCAT), not OR, and a backslash in a string literal is just a
// backslash (NO_BACKSLASH_ESCAPES, PostgreSQL's standard_conforming_strings), so
// that '\s+' reaches regexp_split_to_table intact.
const sqlMode = mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes

// Parse parses every statement of query, through the dialect layer
// (dialect.go). On failure it returns an *Error of kind ErrSyntax whose Pos
// points at the offending token, and no statements: a syntax error anywhere
// means nothing runs.
//
// Each statement's OriginTextPosition is set to the byte offset at which its text
// (Text()) starts in query, so that Bind can place errors in a multi-statement
// query. Where the dialect layer rewrote a statement, its Text() is still the
// user's text and the offsets of its nodes are in query.
func Parse(query string) (stmts []ast.StmtNode, err error) {
	d := rewriteDialect(query)
	rewritten := !d.identity(query)
	foldIdentifiers(d)
	// The parser's literal values (its test_driver) panic on some inputs, such
	// as a decimal literal of more digits than MySQL's DECIMAL holds (found by
	// wire's FuzzConn): such a query is refused, never a crash.
	defer func() {
		if r := recover(); r != nil {
			stmts, err = nil, Errorf(ErrSyntax, 0, "syntax error: the parser could not read this query (a numeric literal too long?)")
		}
	}()
	p := parser.New()
	p.SetSQLMode(sqlMode)
	stmts, _, err = p.ParseSQL(d.text)
	if err != nil {
		return nil, syntaxError(query, d, err)
	}
	cursor := 0
	for _, s := range stmts {
		text := s.Text()
		start := cursor
		if i := strings.Index(d.text[cursor:], text); i >= 0 && text != "" {
			start = cursor + i
			cursor = start + len(text)
		}
		if rewritten {
			s.Accept(&originMapper{d: d})
			from, to := d.origin(start), d.originEnd(start+len(text))
			if from <= to && to <= len(query) {
				s.SetText(nil, query[from:to])
			}
			start = from
		} else if start+len(text) <= len(query) {
			s.SetText(nil, query[start:start+len(text)]) // the user's words, not their folded case
		}
		s.SetOriginTextPosition(start)
	}
	if !d.facts.empty() {
		for i, s := range stmts {
			stmts[i] = &dialectStmt{StmtNode: s, facts: d.facts}
		}
	}
	return stmts, nil
}

// originMapper moves the offsets of a rewritten statement's nodes from the
// rewritten text to the user's.
type originMapper struct{ d *dialected }

func (m *originMapper) Enter(n ast.Node) (ast.Node, bool) {
	if off := n.OriginTextPosition(); off > 0 {
		n.SetOriginTextPosition(m.d.origin(off))
	}
	if p, ok := n.(*test_driver.ParamMarkerExpr); ok {
		p.Offset = m.d.origin(p.Offset) // its number may be a fact, by the user's offset
	}
	return n, false
}

func (m *originMapper) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// tidbSyntaxError matches the scanner's message: the rest of the query from the
// offending token, truncated at 2048 bytes with the full length given.
var tidbSyntaxError = regexp.MustCompile(`(?s)^line (\d+) column (\d+) near "(.*)"(.*?)(?:\(total length (\d+)\))?\s*$`)

// syntaxError turns the parser's "line L column C near ..." about d's text
// into PostgreSQL's `syntax error at or near "tok"` with a character position
// in the user's query.
func syntaxError(query string, d *dialected, err error) *Error {
	m := tidbSyntaxError.FindStringSubmatch(err.Error())
	if m == nil {
		return Errorf(ErrSyntax, 0, "syntax error: %s", err.Error())
	}
	text := d.text
	rest := m[3]
	restLen := len(rest)
	if m[5] != "" {
		restLen, _ = strconv.Atoi(m[5])
	}
	off := len(text) - restLen
	if off < 0 || off > len(text) || !strings.HasPrefix(text[off:], rest) {
		// Not a suffix of the query as we know it: fall back to line and column.
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		off = lineColOffset(text, line, col)
	}
	if off < len(text) {
		off = d.origin(off)
	} else {
		off = len(query)
	}
	tok := firstToken(query[off:])
	if tok == "" {
		return Errorf(ErrSyntax, charPos(query, len(query)), "syntax error at end of input")
	}
	return Errorf(ErrSyntax, charPos(query, off), "syntax error at or near \"%s\"", tok)
}

// lineColOffset converts a 1-based line and column to a byte offset, clamped to
// the query.
func lineColOffset(query string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(query[off:], '\n')
		if i < 0 {
			return len(query)
		}
		off += i + 1
	}
	return min(off+max(col-1, 0), len(query))
}

// firstToken returns the SQL token s starts with, roughly as the lexer reads it:
// a word, a number, a quoted string or identifier, or one punctuation character.
func firstToken(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	if s == "" {
		return ""
	}
	isWord := func(r rune) bool {
		return r == '_' || r == '$' || r >= 0x80 || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	switch c := s[0]; {
	case c == '\'' || c == '"' || c == '`':
		if end := strings.IndexByte(s[1:], c); end >= 0 {
			return s[:end+2]
		}
		return s
	case c == '.' || isWord(rune(c)):
		i := 0
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isWord(r) && !(r == '.' && i == 0) {
				break
			}
			i += n
		}
		return s[:i]
	}
	for _, op := range []string{"<=>", "<>", "<=", ">=", "!=", "||", "&&", "::", ":="} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

// charIndex converts byte offsets in one query to character positions
// (charPos) without counting from the start each time: a statement with
// 70,000 column references asks for each one's. An ASCII query's positions
// are its offsets; another's are counted from the nearest mark.
type charIndex struct {
	query string
	ascii bool
	marks []int // marks[i] is the number of characters in query[:i*charMark]
}

const charMark = 256

func newCharIndex(query string) *charIndex {
	x := &charIndex{query: query, ascii: true}
	for i := 0; i < len(query); i++ {
		if query[i] >= utf8.RuneSelf {
			x.ascii = false
			break
		}
	}
	if !x.ascii {
		n := 0
		for i := 0; i < len(query); i += charMark {
			x.marks = append(x.marks, n)
			n += utf8.RuneCountInString(query[i:min(i+charMark, len(query))])
		}
	}
	return x
}

// pos is charPos(query, off).
func (x *charIndex) pos(off int) int {
	if off < 0 {
		return 0
	}
	off = min(off, len(x.query))
	if x.ascii {
		return off + 1
	}
	m := off / charMark
	return x.marks[m] + utf8.RuneCountInString(x.query[m*charMark:off]) + 1
}

// charPos converts a byte offset in query into PostgreSQL's 1-based character
// position.
func charPos(query string, off int) int {
	if off < 0 {
		return 0
	}
	if off > len(query) {
		off = len(query)
	}
	return utf8.RuneCountInString(query[:off]) + 1
}

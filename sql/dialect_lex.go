package sql

import (
	"strings"
	"unicode/utf8"
)

// The dialect layer's lexer (dialect.go): it cuts SQL text into tokens, every
// byte of the text in exactly one, so that the text is their concatenation.
// It knows only what the rewrites need: words, quoted strings and
// identifiers, numbers, parameters, punctuation, and the blanks and comments
// between them. It never fails: an unterminated quote or comment runs to the
// end of the text, for the parser to report.

type tokenKind uint8

const (
	tokSpace  tokenKind = iota // blanks and comments
	tokWord                    // a keyword or an unquoted identifier
	tokIdent                   // a quoted identifier, "x" or `x`
	tokString                  // a string literal, 'x' (also E'x', X'..', N'x')
	tokNumber                  // 1, 1.5, .5, 1e3
	tokParam                   // $1
	tokPunct                   // an operator or punctuation: ( ) , ; :: <= ...
)

// token is one token: its text, and where it starts in the text the dialect
// layer was given (for a token a rewrite made up, where the text it stands
// for starts).
type token struct {
	kind tokenKind
	text string
	pos  int
	made bool // made by a rewrite rather than copied from the input
	// end, for a made token that stands for user text to its end, is where
	// that text ends (0: not known), so a statement made up wholly (END
	// written as COMMIT) keeps the user's text.
	end int
}

// is reports whether t is the word w, in any case.
func (t token) is(w string) bool { return t.kind == tokWord && strings.EqualFold(t.text, w) }

// lex cuts sql into tokens.
func lex(sql string) []token {
	var toks []token
	for i := 0; i < len(sql); {
		start := i
		kind := tokPunct
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			kind = tokSpace
			for i < len(sql) && strings.IndexByte(" \t\n\r\f", sql[i]) >= 0 {
				i++
			}
		case c == '-' && strings.HasPrefix(sql[i:], "--"), c == '#':
			kind = tokSpace
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			kind = tokSpace
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '\'':
			kind, i = tokString, endQuoted(sql, i, '\'')
		case c == '"' || c == '`':
			kind, i = tokIdent, endQuoted(sql, i, c)
		case (c == 'e' || c == 'E') && i+1 < len(sql) && sql[i+1] == '\'':
			kind, i = tokString, endEscaped(sql, i+1)
		case (c == 'x' || c == 'X' || c == 'n' || c == 'N' || c == 'b' || c == 'B') &&
			i+1 < len(sql) && sql[i+1] == '\'':
			kind, i = tokString, endQuoted(sql, i+1, '\'')
		case c >= '0' && c <= '9', c == '.' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			kind = tokNumber
			i = endNumber(sql, i)
		case c == '$' && dollarTag(sql[i:]) != "":
			kind = tokString
			tag := dollarTag(sql[i:])
			if j := strings.Index(sql[i+len(tag):], tag); j >= 0 {
				i += len(tag) + j + len(tag)
			} else {
				i = len(sql)
			}
		case c == '$' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			kind = tokParam
			i++
			for i < len(sql) && sql[i] >= '0' && sql[i] <= '9' {
				i++
			}
		case isWordByte(c):
			kind = tokWord
			for i < len(sql) && isWordByte(sql[i]) {
				i++
			}
		default:
			i += punctLen(sql[i:])
		}
		toks = append(toks, token{kind: kind, text: sql[start:i], pos: start})
	}
	return toks
}

// dollarTag returns the opening delimiter of a dollar-quoted string s starts
// with, PostgreSQL's $$ or $tag$ (a tag being an identifier without $), or "".
func dollarTag(s string) string {
	if len(s) < 2 || s[0] != '$' {
		return ""
	}
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1]
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || j > 1 && c >= '0' && c <= '9':
		default:
			return ""
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// endQuoted returns the end of the quoted token opening at sql[i] with q; a
// doubled quote inside is one character of it.
func endQuoted(sql string, i int, q byte) int {
	for j := i + 1; j < len(sql); j++ {
		if sql[j] == q {
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// endEscaped is endQuoted for an E” string, where a backslash escapes the
// character after it, a quote included.
func endEscaped(sql string, i int) int {
	for j := i + 1; j < len(sql); j++ {
		switch {
		case sql[j] == '\\':
			j++
		case sql[j] == '\'' && j+1 < len(sql) && sql[j+1] == '\'':
			j++
		case sql[j] == '\'':
			return j + 1
		}
	}
	return len(sql)
}

func endNumber(sql string, i int) int {
	for i < len(sql) && (sql[i] >= '0' && sql[i] <= '9' || sql[i] == '.') {
		i++
	}
	if i < len(sql) && (sql[i] == 'e' || sql[i] == 'E') {
		j := i + 1
		if j < len(sql) && (sql[j] == '+' || sql[j] == '-') {
			j++
		}
		if j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
			i = j
			for i < len(sql) && sql[i] >= '0' && sql[i] <= '9' {
				i++
			}
		}
	}
	return i
}

// punctLen is the length of the operator or punctuation s starts with.
func punctLen(s string) int {
	for _, op := range []string{"<=>", "<>", "<=", ">=", "!=", "||", "&&", "::", ":=", "->>", "->", "<<", ">>"} {
		if strings.HasPrefix(s, op) {
			return len(op)
		}
	}
	_, n := utf8.DecodeRuneInString(s)
	return n
}

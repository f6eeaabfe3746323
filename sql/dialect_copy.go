package sql

import (
	"strings"
)

// Copy is a COPY statement, which the parser cannot read and the wire server
// runs itself: COPY t [(columns)] FROM STDIN, whose rows the client sends as
// COPY data, and COPY {t [(columns)] | (query)} TO STDOUT, whose rows the
// server sends.
type Copy struct {
	Table   string
	Columns []string // nil: every column, in order
	// Query is the text of COPY (query) TO STDOUT's query ("" for a table),
	// QueryPos where it starts in the statement's text.
	Query    string
	QueryPos int
	// Pos is where the table's name (or the query's parenthesis) starts, for
	// errors.
	Pos int
	// To is COPY ... TO STDOUT; else FROM STDIN.
	To      bool
	Options CopyOptions
}

// CopyOptions are COPY's data format, with PostgreSQL's defaults filled in.
type CopyOptions struct {
	CSV       bool   // FORMAT csv; else text (or binary)
	Binary    bool   // FORMAT binary: PostgreSQL's binary tuples
	Header    bool   // the first line names the columns (skipped by FROM)
	Delimiter byte   // a tab in text, a comma in csv
	Null      string // \N in text, the empty unquoted field in csv
	Quote     byte   // csv only: '"'
	Escape    byte   // csv only: the quote
	// ForceQuote names the columns whose values COPY TO quotes in csv even
	// where they need no quotes (FORCE_QUOTE (a, b)); ForceQuoteAll is
	// FORCE_QUOTE *. NULL is never quoted.
	ForceQuote    []string
	ForceQuoteAll bool
}

// ParseCopy recognises a COPY statement (ok false for any other statement,
// and for one it cannot tell apart from another: the parser then reports it)
// and reads its options: FORMAT text|csv|binary, HEADER [boolean], DELIMITER,
// NULL, QUOTE, ESCAPE, FORCE_QUOTE (columns)|*, ENCODING and FREEZE, in the
// parenthesised form and in the old one (WITH CSV HEADER DELIMITER AS ','
// FORCE QUOTE *; pgx's CopyFrom sends "COPY t (a, b) FROM STDIN BINARY").
// Like the rewrites it reads tokens: a parenthesis or keyword inside a string
// or comment of the query is text. Its errors are PostgreSQL's (its
// ProcessCopyOptions), with their codes; COPY to or from a server's file or
// program is refused: the server reads and writes no files for clients.
func ParseCopy(query string) (*Copy, bool, error) {
	toks := lex(query)
	if end := statementEnd(toks); len(words(toks[end:])) > 0 {
		return nil, false, nil // more than one statement
	}
	w := words(toks)
	if n := len(w); n > 0 && toks[w[n-1]].text == ";" {
		w = w[:n-1]
	}
	if len(w) < 4 || !toks[w[0]].is("COPY") {
		return nil, false, nil
	}
	c := &Copy{Pos: toks[w[1]].pos}
	k := 2
	switch first := toks[w[1]]; {
	case first.text == "(":
		closing, depth := -1, 0
		for j := 1; j < len(w) && closing < 0; j++ {
			if t := toks[w[j]]; t.kind == tokPunct {
				switch t.text {
				case "(":
					depth++
				case ")":
					if depth--; depth == 0 {
						closing = j
					}
				}
			}
		}
		if closing < 0 {
			return nil, false, nil
		}
		c.QueryPos = first.pos + 1
		c.Query, k = query[c.QueryPos:toks[w[closing]].pos], closing+1
		if strings.TrimSpace(c.Query) == "" {
			return nil, false, nil
		}
	case first.kind == tokWord || first.kind == tokIdent:
		c.Table = identText(first)
		if k < len(w) && toks[w[k]].text == "." { // public.t
			if c.Table != "public" || k+1 >= len(w) {
				return nil, false, nil
			}
			c.Table, c.Pos, k = identText(toks[w[k+1]]), toks[w[k+1]].pos, k+2
		}
		if k < len(w) && toks[w[k]].text == "(" {
			for k++; k < len(w) && toks[w[k]].text != ")"; k++ {
				if t := toks[w[k]]; t.text != "," {
					c.Columns = append(c.Columns, identText(t))
				}
			}
			k++
		}
	default:
		return nil, false, nil
	}
	if k+1 >= len(w) {
		return nil, false, nil
	}
	switch dir := toks[w[k]]; {
	case dir.is("TO"):
		c.To = true
	case dir.is("FROM") && c.Query == "":
	case dir.is("FROM"):
		return nil, true, Errorf(ErrSyntax, charPos(query, dir.pos), "syntax error at or near \"%s\"", dir.text)
	default:
		return nil, false, nil
	}
	// STDIN and STDOUT are one in PostgreSQL's grammar: COPY t TO STDIN
	// writes to the client too.
	switch target := toks[w[k+1]]; {
	case target.is("STDIN") || target.is("STDOUT"):
	case target.kind == tokString || target.is("PROGRAM"):
		what := "to a file"
		switch {
		case target.is("PROGRAM"):
			what = "to or from a program"
		case !c.To:
			what = "from a file"
		}
		return nil, true, Errorf(ErrUnsupported, charPos(query, target.pos),
			"COPY %s is not supported: the server reads and writes no files for clients; use COPY ... %s (psql's \\copy)", what, map[bool]string{true: "TO STDOUT", false: "FROM STDIN"}[c.To])
	default:
		return nil, false, nil
	}
	opts, err := copyOptionList(query, toks, w[k+2:])
	if err != nil {
		return nil, true, err
	}
	if err := c.Options.set(opts, c.To); err != nil {
		return nil, true, err
	}
	return c, true, nil
}

// identText is the name a word or quoted identifier token stands for: a word
// in lower case, a quoted name as written.
func identText(t token) string {
	if t.kind == tokIdent && len(t.text) >= 2 {
		q := t.text[:1]
		return strings.ReplaceAll(t.text[1:len(t.text)-1], q+q, q)
	}
	return strings.ToLower(t.text)
}

// literalText is the value of a string literal token ('x', E'\t'), or a word's
// text. An E” string's escapes are PostgreSQL's: \b \f \n \r \t, \xHH,
// octal \ooo, \uXXXX and \UXXXXXXXX; any other character after a backslash
// stands for itself.
func literalText(t token) string {
	if t.kind != tokString {
		return t.text
	}
	s := t.text
	escapes := len(s) > 0 && (s[0] == 'E' || s[0] == 'e')
	if escapes {
		s = s[1:]
	}
	if len(s) < 2 {
		return s
	}
	s = strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	if !escapes {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			sb.WriteByte(s[i])
			continue
		}
		i++
		// number reads up to max digits of base at s[i:], at least one.
		number := func(base, max int) (rune, bool) {
			n, k := 0, 0
			for ; k < max && i+k < len(s); k++ {
				d := strings.IndexByte("0123456789abcdef", s[i+k]|0x20) // |0x20: lower case
				if d < 0 || d >= base {
					break
				}
				n = n*base + d
			}
			if k == 0 {
				return 0, false
			}
			i += k - 1
			return rune(n), true
		}
		switch c := s[i]; c {
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'x', 'u', 'U':
			i++
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			r, ok := number(16, digits)
			switch {
			case !ok:
				i--
				sb.WriteByte(c)
			case c == 'x':
				sb.WriteByte(byte(r))
			default:
				sb.WriteRune(r)
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			r, _ := number(8, 3)
			sb.WriteByte(byte(r))
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

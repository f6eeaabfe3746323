package sql

import (
	"strings"
)

// CopyFrom is COPY t [(columns)] FROM STDIN [[WITH] (options) | legacy
// options], which the parser cannot read and the wire server runs itself:
// the client sends the rows as COPY data.
type CopyFrom struct {
	Table   string
	Columns []string // nil: every column, in order
	// Pos is where the table's name starts, for errors.
	Pos     int
	Options CopyOptions
}

// CopyOptions are COPY's data format, with PostgreSQL's defaults filled in.
type CopyOptions struct {
	CSV       bool   // FORMAT csv; else text (or binary)
	Binary    bool   // FORMAT binary: PostgreSQL's binary tuples
	Header    bool   // the first line names the columns: skipped
	Delimiter byte   // a tab in text, a comma in csv
	Null      string // \N in text, the empty unquoted field in csv
	Quote     byte   // csv only: '"'
	Escape    byte   // csv only: the quote
}

// ParseCopyFrom recognises COPY ... FROM STDIN (ok false for any other
// statement) and reads its options: FORMAT text|csv, HEADER [boolean],
// DELIMITER, NULL, QUOTE and ESCAPE, in the parenthesised form and in the old
// one (WITH CSV HEADER DELIMITER AS ','), and FORMAT binary (pgx's
// CopyFrom sends "COPY t (a, b) FROM STDIN BINARY"). Like the rewrites it
// reads tokens. An option it does not know is an error at the option.
func ParseCopyFrom(query string) (*CopyFrom, bool, error) {
	toks := lex(query)
	w := words(toks)
	if n := len(w); n > 0 && toks[w[n-1]].text == ";" {
		w = w[:n-1]
	}
	if len(w) < 4 || !toks[w[0]].is("COPY") || toks[w[1]].kind != tokWord && toks[w[1]].kind != tokIdent {
		return nil, false, nil
	}
	c := &CopyFrom{Table: identText(toks[w[1]]), Pos: toks[w[1]].pos}
	k := 2
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
	if k+1 >= len(w) || !toks[w[k]].is("FROM") || !toks[w[k+1]].is("STDIN") {
		return nil, false, nil
	}
	rest := w[k+2:]
	if len(rest) > 0 && toks[rest[0]].is("WITH") {
		rest = rest[1:]
	}
	var opts []copyOption
	if len(rest) > 0 && toks[rest[0]].text == "(" {
		if toks[rest[len(rest)-1]].text != ")" {
			return nil, true, Errorf(ErrSyntax, toks[rest[0]].pos, "syntax error at or near \"(\": COPY options end with \")\"")
		}
		var cur *copyOption
		for _, i := range rest[1 : len(rest)-1] {
			t := toks[i]
			switch {
			case t.text == ",":
				cur = nil
			case cur == nil:
				opts = append(opts, copyOption{name: strings.ToLower(t.text), pos: t.pos})
				cur = &opts[len(opts)-1]
			default:
				cur.value, cur.hasValue = literalText(t), true
			}
		}
	} else {
		for j := 0; j < len(rest); j++ {
			t := toks[rest[j]]
			o := copyOption{name: strings.ToLower(t.text), pos: t.pos}
			switch o.name {
			case "csv", "binary":
				o.name, o.value, o.hasValue = "format", o.name, true
			case "delimiter", "null", "quote", "escape":
				if j+1 < len(rest) && toks[rest[j+1]].is("AS") {
					j++
				}
				if j+1 < len(rest) {
					j++
					o.value, o.hasValue = literalText(toks[rest[j]]), true
				}
			}
			opts = append(opts, o)
		}
	}
	if err := c.Options.set(opts); err != nil {
		return nil, true, err
	}
	return c, true, nil
}

type copyOption struct {
	name, value string
	hasValue    bool
	pos         int
}

func (o *CopyOptions) set(opts []copyOption) error {
	var delim, null, quote, escape *copyOption
	for i := range opts {
		op := &opts[i]
		switch op.name {
		case "format":
			switch strings.ToLower(op.value) {
			case "csv":
				o.CSV = true
			case "text":
			case "binary":
				o.Binary = true
			default:
				return Errorf(ErrInvalidValue, op.pos, "COPY format \"%s\" not recognized", op.value)
			}
		case "header":
			switch strings.ToLower(op.value) {
			case "", "true", "on", "1":
				o.Header = true
			case "false", "off", "0":
			case "match":
				o.Header = true // the names are not checked
			default:
				return Errorf(ErrInvalidValue, op.pos, "header requires a Boolean value or \"match\"")
			}
		case "delimiter":
			delim = op
		case "null":
			null = op
		case "quote":
			quote = op
		case "escape":
			escape = op
		case "encoding":
			if !strings.EqualFold(op.value, "utf8") && !strings.EqualFold(op.value, "utf-8") {
				return Errorf(ErrUnsupported, op.pos, "COPY ENCODING %s is not supported: data is UTF-8", op.value)
			}
		default:
			return Errorf(ErrSyntax, op.pos, "option \"%s\" not recognized", op.name)
		}
	}
	o.Delimiter, o.Null = '\t', `\N`
	if o.CSV {
		o.Delimiter, o.Null, o.Quote, o.Escape = ',', "", '"', '"'
	}
	oneByte := func(op *copyOption, what string, dst *byte) error {
		if op == nil {
			return nil
		}
		if len(op.value) != 1 {
			return Errorf(ErrInvalidValue, op.pos, "COPY %s must be a single one-byte character", what)
		}
		*dst = op.value[0]
		return nil
	}
	if err := oneByte(delim, "delimiter", &o.Delimiter); err != nil {
		return err
	}
	if null != nil {
		o.Null = null.value
	}
	if o.Binary && (delim != nil || null != nil || o.Header) {
		return Errorf(ErrInvalidValue, opts[0].pos, "cannot specify DELIMITER, NULL or HEADER in BINARY mode")
	}
	if (quote != nil || escape != nil) && !o.CSV {
		op := quote
		if op == nil {
			op = escape
		}
		return Errorf(ErrInvalidValue, op.pos, "COPY %s available only in CSV mode", op.name)
	}
	if err := oneByte(quote, "quote", &o.Quote); err != nil {
		return err
	}
	if escape == nil {
		o.Escape = o.Quote
	}
	return oneByte(escape, "escape", &o.Escape)
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
// text.
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
		switch s[i] {
		case 't':
			sb.WriteByte('\t')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}

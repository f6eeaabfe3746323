package sql

import (
	"strings"
)

// copyOption is one COPY option as written: its name, and its value, one
// token's (a string, word or number) or a list of column names, or "*".
type copyOption struct {
	name     string
	value    string
	hasValue bool
	list     []string // FORCE_QUOTE (a, b): the names
	isList   bool
	star     bool // FORCE_QUOTE *
	pos      int  // 1-based character position, for errors
}

// copyOptionList reads the options after COPY's STDIN or STDOUT (the tokens
// at w of toks): [WITH] (name [value], ...) or the old form's keywords.
func copyOptionList(query string, toks []token, w []int) ([]copyOption, error) {
	if len(w) > 0 && toks[w[0]].is("WITH") {
		w = w[1:]
	}
	if len(w) == 0 {
		return nil, nil
	}
	if t := toks[w[0]]; t.text == "(" {
		if toks[w[len(w)-1]].text != ")" {
			return nil, Errorf(ErrSyntax, charPos(query, t.pos), "syntax error at or near \"(\": COPY options end with \")\"")
		}
		return copyParenOptions(query, toks, w[1:len(w)-1])
	}
	if t := toks[w[0]]; t.is("WHERE") {
		return nil, Errorf(ErrSyntax, charPos(query, t.pos), "WHERE clause not allowed with COPY TO")
	}
	return copyLegacyOptions(query, toks, w)
}

// copyParenOptions reads name [value] items separated by commas; a value is
// one token, *, or a parenthesised list of names.
func copyParenOptions(query string, toks []token, w []int) ([]copyOption, error) {
	var opts []copyOption
	for j := 0; j < len(w); j++ {
		t := toks[w[j]]
		if t.text == "," {
			continue
		}
		o := copyOption{name: strings.ToLower(t.text), pos: charPos(query, t.pos)}
		if t.kind == tokIdent {
			o.name = identText(t)
		}
		if j+1 < len(w) && toks[w[j+1]].text != "," {
			j++
			switch v := toks[w[j]]; {
			case v.text == "*":
				o.star = true
			case v.text == "(":
				o.isList = true
				for j++; j < len(w) && toks[w[j]].text != ")"; j++ {
					if n := toks[w[j]]; n.text != "," {
						o.list = append(o.list, identText(n))
					}
				}
			default:
				o.value, o.hasValue = literalText(v), true
			}
			if j+1 < len(w) && toks[w[j+1]].text != "," {
				return nil, Errorf(ErrSyntax, charPos(query, toks[w[j+1]].pos), "syntax error at or near \"%s\"", toks[w[j+1]].text)
			}
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// copyLegacyOptions reads the options of PostgreSQL's grammar before 9.0:
// BINARY, CSV, HEADER, FREEZE, DELIMITER [AS] 'x', NULL [AS] 'x', QUOTE [AS]
// 'x', ESCAPE [AS] 'x', ENCODING 'x', FORCE QUOTE a, b | *, FORCE NOT NULL
// a, b and FORCE NULL a, b.
func copyLegacyOptions(query string, toks []token, w []int) ([]copyOption, error) {
	var opts []copyOption
	for j := 0; j < len(w); j++ {
		t := toks[w[j]]
		o := copyOption{name: strings.ToLower(t.text), pos: charPos(query, t.pos)}
		switch o.name {
		case "csv", "binary":
			o.name, o.value, o.hasValue = "format", o.name, true
		case "delimiter", "null", "quote", "escape", "encoding":
			if j+1 < len(w) && toks[w[j+1]].is("AS") {
				j++
			}
			if j+1 < len(w) {
				j++
				o.value, o.hasValue = literalText(toks[w[j]]), true
			}
		case "force":
			switch {
			case j+1 < len(w) && toks[w[j+1]].is("QUOTE"):
				o.name, j = "force_quote", j+1
			case j+2 < len(w) && toks[w[j+1]].is("NOT") && toks[w[j+2]].is("NULL"):
				o.name, j = "force_not_null", j+2
			case j+1 < len(w) && toks[w[j+1]].is("NULL"):
				o.name, j = "force_null", j+1
			default:
				return nil, Errorf(ErrSyntax, o.pos, "syntax error at or near \"%s\"", t.text)
			}
			if j+1 < len(w) && toks[w[j+1]].text == "*" {
				o.star, j = true, j+1
				break
			}
			o.isList = true
			for j+1 < len(w) && (toks[w[j+1]].kind == tokWord || toks[w[j+1]].kind == tokIdent) {
				o.list, j = append(o.list, identText(toks[w[j+1]])), j+1
				if j+1 >= len(w) || toks[w[j+1]].text != "," {
					break
				}
				j++
			}
		}
		opts = append(opts, o)
	}
	return opts, nil
}

// set checks the options as PostgreSQL's ProcessCopyOptions does, in its
// order and with its errors, and fills in the defaults; to is COPY TO.
func (o *CopyOptions) set(opts []copyOption, to bool) error {
	seen := map[string]bool{}
	var delim, null, quote, escape, forceQuote *copyOption
	for i := range opts {
		op := &opts[i]
		if seen[op.name] {
			return Errorf(ErrSyntax, op.pos, "conflicting or redundant options")
		}
		seen[op.name] = true
		needValue := func() error {
			if !op.hasValue {
				return Errorf(ErrSyntax, 0, "%s requires a parameter", op.name)
			}
			return nil
		}
		switch op.name {
		case "format":
			if err := needValue(); err != nil {
				return err
			}
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
			switch v := strings.ToLower(op.value); {
			case !op.hasValue || v == "true" || v == "on" || v == "1":
				o.Header = true
			case v == "false" || v == "off" || v == "0":
			case v == "match" && to:
				return Errorf(ErrUnsupported, 0, "cannot use \"match\" with HEADER in COPY TO")
			case v == "match":
				o.Header = true // the names are not checked
			default:
				return Errorf(ErrSyntax, 0, "header requires a Boolean value or \"match\"")
			}
		case "freeze": // a hint to skip visibility work, which Hummer has none of
			switch v := strings.ToLower(op.value); {
			case !op.hasValue, v == "true", v == "on", v == "1", v == "false", v == "off", v == "0":
			default:
				return Errorf(ErrSyntax, 0, "freeze requires a Boolean value")
			}
		case "delimiter", "null", "quote", "escape":
			if err := needValue(); err != nil {
				return err
			}
			switch op.name {
			case "delimiter":
				delim = op
			case "null":
				null = op
			case "quote":
				quote = op
			default:
				escape = op
			}
		case "force_quote":
			if !op.star && !op.isList {
				return Errorf(ErrInvalidValue, op.pos, "argument to option \"%s\" must be a list of column names", op.name)
			}
			forceQuote = op
		case "force_not_null", "force_null":
			if !op.isList {
				return Errorf(ErrInvalidValue, op.pos, "argument to option \"%s\" must be a list of column names", op.name)
			}
		case "encoding":
			if err := needValue(); err != nil {
				return err
			}
			switch strings.ToLower(strings.ReplaceAll(op.value, "-", "")) {
			case "utf8", "unicode":
			case "sqlascii", "latin1", "latin9", "win1252", "euc_jp", "sjis", "gbk", "big5", "koi8r", "win1251":
				return Errorf(ErrUnsupported, op.pos, "COPY ENCODING %s is not supported: data is UTF-8", op.value)
			default:
				return Errorf(ErrInvalidValue, op.pos, "argument to option \"encoding\" must be a valid encoding name")
			}
		default:
			return Errorf(ErrSyntax, op.pos, "option \"%s\" not recognized", op.name)
		}
	}
	if o.Binary && delim != nil {
		return Errorf(ErrSyntax, 0, "cannot specify DELIMITER in BINARY mode")
	}
	if o.Binary && null != nil {
		return Errorf(ErrSyntax, 0, "cannot specify NULL in BINARY mode")
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
			return Errorf(ErrUnsupported, 0, "COPY %s must be a single one-byte character", what)
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
	if o.Delimiter == '\n' || o.Delimiter == '\r' {
		return Errorf(ErrInvalidValue, 0, "COPY delimiter cannot be newline or carriage return")
	}
	if strings.ContainsAny(o.Null, "\r\n") {
		return Errorf(ErrInvalidValue, 0, "COPY null representation cannot use newline or carriage return")
	}
	if !o.CSV && strings.IndexByte("\\.abcdefghijklmnopqrstuvwxyz0123456789", o.Delimiter) >= 0 {
		return Errorf(ErrInvalidValue, 0, "COPY delimiter cannot be \"%c\"", o.Delimiter)
	}
	if o.Binary && o.Header {
		return Errorf(ErrUnsupported, 0, "cannot specify HEADER in BINARY mode")
	}
	if !o.CSV && quote != nil {
		return Errorf(ErrUnsupported, 0, "COPY quote available only in CSV mode")
	}
	if err := oneByte(quote, "quote", &o.Quote); err != nil {
		return err
	}
	if o.CSV && o.Delimiter == o.Quote {
		return Errorf(ErrInvalidValue, 0, "COPY delimiter and quote must be different")
	}
	if !o.CSV && escape != nil {
		return Errorf(ErrUnsupported, 0, "COPY escape available only in CSV mode")
	}
	o.Escape = o.Quote
	if err := oneByte(escape, "escape", &o.Escape); err != nil {
		return err
	}
	if forceQuote != nil && !o.CSV {
		return Errorf(ErrUnsupported, 0, "COPY force quote available only in CSV mode")
	}
	if forceQuote != nil && !to {
		return Errorf(ErrUnsupported, 0, "COPY force quote only available using COPY TO")
	}
	for _, name := range []string{"force_not_null", "force_null"} {
		what := strings.ReplaceAll(strings.TrimPrefix(name, "force_"), "_", " ")
		switch {
		case seen[name] && !o.CSV:
			return Errorf(ErrUnsupported, 0, "COPY force %s available only in CSV mode", what)
		case seen[name] && to:
			return Errorf(ErrUnsupported, 0, "COPY force %s only available using COPY FROM", what)
		case seen[name]:
			return Errorf(ErrUnsupported, 0, "COPY FORCE_%s is not supported", strings.ToUpper(strings.TrimPrefix(name, "force_")))
		}
	}
	if strings.IndexByte(o.Null, o.Delimiter) >= 0 {
		return Errorf(ErrUnsupported, 0, "COPY delimiter must not appear in the NULL specification")
	}
	if o.CSV && strings.IndexByte(o.Null, o.Quote) >= 0 {
		return Errorf(ErrUnsupported, 0, "CSV quote character must not appear in the NULL specification")
	}
	if forceQuote != nil {
		o.ForceQuote, o.ForceQuoteAll = forceQuote.list, forceQuote.star
	}
	return nil
}

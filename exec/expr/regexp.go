package expr

import (
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// regexp_replace(s, pattern, replacement[, flags]), as PostgreSQL's for the
// patterns Go's RE2 engine shares with PostgreSQL's (no backreferences in the
// pattern, no lookaround): the first match replaced, every one with flag g,
// case ignored with flag i; in the replacement \1..\9 are the groups and \&
// the whole match. '.' matches newlines, as in PostgreSQL's default mode.

// compileRegexp compiles a PostgreSQL pattern with its flags.
func compileRegexp(pattern, flags string) (*regexp.Regexp, bool, error) {
	prefix := "(?s)"
	global := false
	for _, f := range flags {
		switch f {
		case 'g':
			global = true
		case 'i':
			prefix += "(?i)"
		case 'c':
		default:
			return nil, false, newError(ErrInvalidArgument, "invalid regular expression option: \"%c\"", f)
		}
	}
	re, err := regexp.Compile(prefix + pattern)
	if err != nil {
		return nil, false, newError(ErrInvalidArgument, "invalid regular expression: %v", err)
	}
	return re, global, nil
}

// pgReplacement turns PostgreSQL's replacement text into Go's template:
// \N -> ${N}, \& -> ${0}, \\ -> \, and a literal $ escaped.
func pgReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '$':
			b.WriteString("$$")
		case c == '\\' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			b.WriteString("${" + string(r[i+1]) + "}")
			i++
		case c == '\\' && i+1 < len(r) && r[i+1] == '&':
			b.WriteString("${0}")
			i++
		case c == '\\' && i+1 < len(r) && r[i+1] == '\\':
			b.WriteByte('\\')
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// evalRegexpReplace is regexp_replace(s, pattern, replacement[, flags]).
func evalRegexpReplace(c *call) (arrow.Array, error) {
	in, pat, rep := textOf(c.args[0]), textOf(c.args[1]), textOf(c.args[2])
	var flags textArg
	hasFlags := len(c.args) > 3
	if hasFlags {
		flags = textOf(c.args[3])
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	var (
		lastPat, lastFlags string
		re                 *regexp.Regexp
		global             bool
		compiled           bool
	)
	for i := range c.n {
		if validAt(valid, i) {
			p, f := string(pat.row(i)), ""
			if hasFlags {
				f = string(flags.row(i))
			}
			if !compiled || p != lastPat || f != lastFlags {
				var err error
				if re, global, err = compileRegexp(p, f); err != nil {
					sb.release()
					releaseBuffer(valid)
					return nil, err
				}
				lastPat, lastFlags, compiled = p, f, true
			}
			s, tmpl := in.row(i), []byte(pgReplacement(string(rep.row(i))))
			if global {
				sb.write(re.ReplaceAll(s, tmpl))
			} else if loc := re.FindSubmatchIndex(s); loc != nil {
				sb.write(s[:loc[0]])
				sb.write(re.Expand(nil, tmpl, s, loc))
				sb.write(s[loc[1]:])
			} else {
				sb.write(s)
			}
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

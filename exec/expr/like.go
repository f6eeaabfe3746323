package expr

// LIKE and ILIKE: % matches any run of characters, _ exactly one, and the
// escape character (backslash unless the query says otherwise; none when it is
// empty) makes the next character literal. Patterns that are a literal with %
// only at the ends become equality, prefix, suffix or substring tests; those
// of literals between %s and no _ (TPC-H q13's '%special%requests%') find
// each literal after the one before (bytes.Index), the leftmost match of each
// being as good as any.

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

var (
	errLikeEscape     = newError(ErrInvalidArgument, "invalid escape string")
	errLikeEndsEscape = newError(ErrInvalidArgument, "LIKE pattern must not end with escape character")
)

// defaultEscape is the escape of a LIKE written without ESCAPE.
var defaultEscape = []byte{'\\'}

type likeKind uint8

const (
	likeExact likeKind = iota
	likePrefix
	likeSuffix
	likeContains
	likeSegments
	likeGeneral
)

// likeTok is one pattern element: a literal character (its UTF-8 bytes), any
// one character (_), or any run of characters (%).
type likeTok struct {
	lit  []byte
	one  bool
	many bool
}

type likePattern struct {
	kind likeKind
	lit  []byte // for the non-general kinds
	toks []likeTok
	// For likeSegments: the literals between the %s, in order, and whether
	// the pattern starts and ends with %.
	segs        [][]byte
	lead, trail bool
	fold        bool // ILIKE: match lower-cased text against a lower-cased pattern
}

// compileLike parses pattern with the given escape (zero or one character).
func compileLike(pattern, escape []byte, fold bool) (*likePattern, error) {
	var esc rune = -1
	if len(escape) > 0 {
		r, size := utf8.DecodeRune(escape)
		if size != len(escape) {
			return nil, errLikeEscape
		}
		esc = r
	}
	if fold {
		pattern = foldCase(nil, pattern)
	}
	p := &likePattern{fold: fold}
	for i := 0; i < len(pattern); {
		r, size := utf8.DecodeRune(pattern[i:])
		switch {
		case r == esc:
			if i+size >= len(pattern) {
				return nil, errLikeEndsEscape
			}
			_, n := utf8.DecodeRune(pattern[i+size:])
			p.toks = append(p.toks, likeTok{lit: pattern[i+size : i+size+n]})
			size += n
		case r == '%':
			if len(p.toks) == 0 || !p.toks[len(p.toks)-1].many {
				p.toks = append(p.toks, likeTok{many: true})
			}
		case r == '_':
			p.toks = append(p.toks, likeTok{one: true})
		default:
			p.toks = append(p.toks, likeTok{lit: pattern[i : i+size]})
		}
		i += size
	}
	p.classify()
	return p, nil
}

// classify spots the patterns that are one literal with % only at its ends.
func (p *likePattern) classify() {
	toks := p.toks
	lead := len(toks) > 0 && toks[0].many
	if lead {
		toks = toks[1:]
	}
	trail := len(toks) > 0 && toks[len(toks)-1].many
	if trail {
		toks = toks[:len(toks)-1]
	}
	var lit []byte
	for _, t := range toks {
		if t.one || t.many {
			p.classifySegments(lead, trail, toks)
			return
		}
		lit = append(lit, t.lit...)
	}
	p.lit = lit
	switch {
	case lead && trail:
		p.kind = likeContains
	case lead:
		p.kind = likeSuffix
	case trail:
		p.kind = likePrefix
	default:
		p.kind = likeExact
	}
}

// classifySegments makes a pattern of literals between %s (toks, without the
// leading and trailing % that lead and trail say there were) likeSegments,
// and any other likeGeneral.
func (p *likePattern) classifySegments(lead, trail bool, toks []likeTok) {
	p.kind = likeGeneral
	var segs [][]byte
	var cur []byte
	for _, t := range toks {
		switch {
		case t.one:
			return
		case t.many:
			segs = append(segs, cur)
			cur = nil
		default:
			cur = append(cur, t.lit...)
		}
	}
	p.segs, p.lead, p.trail, p.kind = append(segs, cur), lead, trail, likeSegments
}

// matchSegments matches s against a likeSegments pattern.
func (p *likePattern) matchSegments(s []byte) bool {
	segs := p.segs
	pos := 0
	if !p.lead {
		if !bytes.HasPrefix(s, segs[0]) {
			return false
		}
		pos, segs = len(segs[0]), segs[1:]
	}
	var last []byte
	if !p.trail {
		last, segs = segs[len(segs)-1], segs[:len(segs)-1]
	}
	for _, seg := range segs {
		i := bytes.Index(s[pos:], seg)
		if i < 0 {
			return false
		}
		pos += i + len(seg)
	}
	return p.trail || bytes.HasSuffix(s[pos:], last)
}

func (p *likePattern) match(s []byte) bool {
	switch p.kind {
	case likeSegments:
		return p.matchSegments(s)
	case likeExact:
		return bytes.Equal(s, p.lit)
	case likePrefix:
		return bytes.HasPrefix(s, p.lit)
	case likeSuffix:
		return bytes.HasSuffix(s, p.lit)
	case likeContains:
		return bytes.Contains(s, p.lit)
	}
	return matchTokens(p.toks, s)
}

// matchTokens is glob matching with one backtrack point: on a mismatch, the
// last % absorbs one more character and matching resumes after it. That is
// enough because a later % can always absorb whatever an earlier one would.
func matchTokens(toks []likeTok, s []byte) bool {
	si, ti := 0, 0
	starTok, starS := -1, 0
	for si < len(s) {
		if ti < len(toks) {
			t := toks[ti]
			switch {
			case t.many:
				starTok, starS = ti, si
				ti++
				continue
			case t.one:
				si += charLen(s[si:])
				ti++
				continue
			case bytes.HasPrefix(s[si:], t.lit):
				si += len(t.lit)
				ti++
				continue
			}
		}
		if starTok < 0 {
			return false
		}
		starS += charLen(s[starS:])
		si, ti = starS, starTok+1
	}
	for ti < len(toks) && toks[ti].many {
		ti++
	}
	return ti == len(toks)
}

func charLen(s []byte) int {
	if s[0] < utf8.RuneSelf {
		return 1
	}
	_, size := utf8.DecodeRune(s)
	return size
}

// foldCase appends the lower-case form of s to dst.
func foldCase(dst, s []byte) []byte {
	if isASCII(s) {
		for _, c := range s {
			dst = append(dst, lowerASCII[c])
		}
		return dst
	}
	for _, r := range string(s) {
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}

// evalLike computes like(s, pattern [, escape]) and ilike. A literal pattern
// and escape (the usual case) are compiled once; others are recompiled only
// when they change from one row to the next.
func evalLike(c *call) (arrow.Array, error) {
	in, pat := textOf(c.args[0]), textOf(c.args[1])
	var esc textArg
	if len(c.args) == 3 {
		esc = textOf(c.args[2])
	}
	fold := c.e.Func == "ilike"
	constant := c.e.Args[1].Kind == KindLiteral && (esc.offs == nil || c.e.Args[2].Kind == KindLiteral)
	valid, nulls := validity(c.mem, c.n, c.args...)
	out := newBitmap(c.mem, c.n)
	ob := out.Bytes()
	var (
		p               *likePattern
		lastPat, lastEs []byte
		scratch         []byte
	)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		if p == nil || !constant {
			pi, ei := pat.row(i), defaultEscape
			if esc.offs != nil {
				ei = esc.row(i)
			}
			if p == nil || !bytes.Equal(pi, lastPat) || !bytes.Equal(ei, lastEs) {
				var err error
				if p, err = compileLike(pi, ei, fold); err != nil {
					out.Release()
					if valid != nil {
						valid.Release()
					}
					return nil, err
				}
				lastPat, lastEs = pi, ei
			}
		}
		s := in.row(i)
		if fold {
			scratch = foldCase(scratch[:0], s)
			s = scratch
		}
		if p.match(s) {
			bitutil.SetBit(ob, i)
		}
	}
	return finish(arrow.FixedWidthTypes.Boolean, c.n, nulls, valid, out), nil
}

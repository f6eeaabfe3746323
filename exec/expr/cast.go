package expr

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// CanCast reports whether CAST(x AS to) is defined for x of type from: NULL to
// anything; among bigint, double and decimal; bigint and boolean both ways;
// anything to text (PostgreSQL's output format); text to every other type (the
// text must parse, else the cast fails at run time with ErrInvalidCast).
func CanCast(from, to types.Type) bool {
	switch {
	case from == to, from.ID == types.Null, from.ID == to.ID && from.ID == types.Decimal:
		return true
	case from.Base() == to.Base(): // a type held as another (pgtypes.go)
		return true
	case to.ID == types.Null:
		return false
	case to.ID == types.String, from.ID == types.String:
		return true
	case from.IsNumeric() && to.IsNumeric():
		return true
	case from.ID == types.Bool && to.ID == types.Int64, from.ID == types.Int64 && to.ID == types.Bool:
		return true
	case from.ID == types.Date && to.ID == types.Timestamp, from.ID == types.Timestamp && to.ID == types.Date:
		return true
	}
	return false
}

// castArray converts a (of type from) to type to, rounding and failing as
// PostgreSQL's casts do.
func castArray(a arrow.Array, from, to types.Type, mem memory.Allocator) (arrow.Array, error) {
	if from == to {
		a.Retain()
		return a, nil
	}
	if !CanCast(from, to) {
		return nil, newError(ErrBadExpression, "cannot cast type %s to %s", from, to)
	}
	n := a.Len()
	if from.ID == types.Null || a.NullN() == n {
		return array.MakeArrayOfNull(mem, to.Arrow(), n), nil
	}
	if out, ok, err := castHeld(a, from, to, mem); ok {
		return out, err
	}
	if from.ID == types.Decimal && to.ID == types.Decimal && from.Scale == to.Scale && from.Precision <= to.Precision {
		// Widening keeps every value as it is: the same buffers, a new type.
		d := a.Data()
		nd := array.NewData(to.Arrow(), n, d.Buffers(), nil, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), nil
	}
	valid, nulls := validity(mem, n, a)
	var (
		out arrow.Array
		err error
	)
	switch {
	case to.ID == types.String:
		out = castToText(a, from, valid, nulls, mem)
		return out, nil
	case from.ID == types.String:
		out, err = castFromText(textOf(a), to, valid, nulls, mem)
	default:
		out, err = castFixed(a, from, to, valid, nulls, mem)
	}
	if err != nil && valid != nil {
		valid.Release()
	}
	return out, err
}

// castFixed converts among bigint, double, decimal and boolean.
func castFixed(a arrow.Array, from, to types.Type, valid *memory.Buffer, nulls int, mem memory.Allocator) (arrow.Array, error) {
	n := a.Len()
	var (
		data *memory.Buffer
		err  error
	)
	fail := func(i int, e error) bool {
		if validAt(valid, i) {
			err = e
			return true
		}
		return false
	}
	switch {
	case from.ID == types.Date && to.ID == types.Timestamp:
		var out []int64
		data, out = newValues[int64](mem, n)
		copy(out, int64Values(a)) // a date is stored as its midnight
	case from.ID == types.Timestamp && to.ID == types.Date:
		var out []int64
		data, out = newValues[int64](mem, n)
		for i, v := range int64Values(a) {
			out[i] = midnight(v)
		}
	case from.ID == types.Int64 && to.ID == types.Float64:
		var out []float64
		data, out = newValues[float64](mem, n)
		for i, v := range int64Values(a) {
			out[i] = float64(v)
		}
	case from.ID == types.Int64 && to.ID == types.Decimal:
		var out []num
		data, out = newValues[num](mem, n)
		p, s := int(to.Precision), int(to.Scale)
		for i, v := range int64Values(a) {
			r, ok := mulDec(decimal128.FromI64(v), pow10(s))
			if (!ok || !fits(r, p)) && fail(i, errNumericRange) {
				break
			}
			out[i] = r
		}
	case from.ID == types.Int64 && to.ID == types.Bool:
		data = newBitmap(mem, n)
		d := data.Bytes()
		for i, v := range int64Values(a) {
			if v != 0 {
				bitutil.SetBit(d, i)
			}
		}
	case from.ID == types.Bool && to.ID == types.Int64:
		var out []int64
		data, out = newValues[int64](mem, n)
		bits, off := boolValues(a.(*array.Boolean))
		for i := range out {
			if bitutil.BitIsSet(bits, off+i) {
				out[i] = 1
			}
		}
	case from.ID == types.Float64 && to.ID == types.Int64:
		// PostgreSQL rounds with rint(): half to even, so 2.5 becomes 2.
		var out []int64
		data, out = newValues[int64](mem, n)
		for i, v := range a.(*array.Float64).Float64Values() {
			r := math.RoundToEven(v)
			if !(r >= -(1<<63) && r < 1<<63) && fail(i, errBigintRange) {
				break
			}
			out[i] = int64(r)
		}
	case from.ID == types.Float64 && to.ID == types.Decimal:
		var out []num
		data, out = newValues[num](mem, n)
		p, s := int(to.Precision), int(to.Scale)
		var buf [32]byte
		for i, v := range a.(*array.Float64).Float64Values() {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				if fail(i, newError(ErrInvalidCast, "cannot convert %s to numeric", floatText(v))) {
					break
				}
				continue
			}
			// PostgreSQL converts through 15 significant digits (DBL_DIG).
			r, st := parseDecimal(strconv.AppendFloat(buf[:0], v, 'e', 14, 64), p, s)
			if st != parsed && fail(i, errNumericRange) {
				break
			}
			out[i] = r
		}
	case from.ID == types.Decimal && to.ID == types.Int64:
		var out []int64
		data, out = newValues[int64](mem, n)
		s := int(from.Scale)
		for i, v := range a.(*array.Decimal128).Values() {
			r, ok := divDec(v, 0, pow10(s), halfAway)
			x, isSmall := small(r)
			if (!ok || !isSmall) && fail(i, errBigintRange) {
				break
			}
			out[i] = x
		}
	case from.ID == types.Decimal && to.ID == types.Float64:
		var out []float64
		data, out = newValues[float64](mem, n)
		s := int(from.Scale)
		for i, v := range a.(*array.Decimal128).Values() {
			out[i] = decToFloat(v, s)
		}
	case from.ID == types.Decimal && to.ID == types.Decimal:
		var out []num
		data, out = newValues[num](mem, n)
		s1, s2, p := int(from.Scale), int(to.Scale), int(to.Precision)
		for i, v := range a.(*array.Decimal128).Values() {
			r, ok := rescale(v, s1, s2)
			if (!ok || !fits(r, p)) && fail(i, errNumericRange) {
				break
			}
			out[i] = r
		}
	default:
		return nil, newError(ErrBadExpression, "cannot cast type %s to %s", from, to)
	}
	if err != nil {
		data.Release()
		return nil, err
	}
	return finish(to.Arrow(), n, nulls, valid, data), nil
}

// castToText writes each value in PostgreSQL's output format.
func castToText(a arrow.Array, from types.Type, valid *memory.Buffer, nulls int, mem memory.Allocator) arrow.Array {
	n := a.Len()
	sb := newStringBuilder(mem, n, n*8)
	var buf [64]byte
	for i := range n {
		if validAt(valid, i) {
			sb.write(appendText(buf[:0], a, from, i))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array()
}

// appendText appends row i of a (not NULL) in PostgreSQL's text output format.
func appendText(dst []byte, a arrow.Array, t types.Type, i int) []byte {
	if out, ok := appendHeldText(dst, a, t, i); ok {
		return out
	}
	switch t.ID {
	case types.Bool:
		if a.(*array.Boolean).Value(i) {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case types.Int64:
		return strconv.AppendInt(dst, a.(*array.Int64).Value(i), 10)
	case types.Float64:
		return types.AppendFloat(dst, a.(*array.Float64).Value(i))
	case types.Decimal:
		return types.AppendDecimal(dst, a.(*array.Decimal128).Value(i), int(t.Scale))
	case types.Timestamp:
		return types.AppendTimestamp(dst, int64(a.(*array.Timestamp).Value(i)))
	case types.Date:
		return types.AppendDate(dst, int64(a.(*array.Timestamp).Value(i)))
	case types.String:
		return append(dst, a.(*array.String).Value(i)...)
	}
	return dst
}

// castFromText parses each row as PostgreSQL's input function for type to does.
func castFromText(in textArg, to types.Type, valid *memory.Buffer, nulls int, mem memory.Allocator) (arrow.Array, error) {
	n := len(in.offs) - 1
	var (
		data *memory.Buffer
		err  error
	)
	switch to.ID {
	case types.Int64, types.Timestamp, types.Date:
		var out []int64
		data, out = newValues[int64](mem, n)
		for i := range n {
			if !validAt(valid, i) {
				continue
			}
			switch to.ID {
			case types.Int64:
				out[i], err = parseInt(in.row(i))
			case types.Date: // the date of a timestamp's text too, as PostgreSQL's
				out[i], err = parseTimestamp(in.row(i))
				out[i] = midnight(out[i])
			default:
				out[i], err = parseTimestamp(in.row(i))
			}
			if err != nil {
				break
			}
		}
	case types.Float64:
		var out []float64
		data, out = newValues[float64](mem, n)
		for i := range n {
			if !validAt(valid, i) {
				continue
			}
			if out[i], err = parseFloat(in.row(i)); err != nil {
				break
			}
		}
	case types.Decimal:
		var out []num
		data, out = newValues[num](mem, n)
		p, s := int(to.Precision), int(to.Scale)
		for i := range n {
			if !validAt(valid, i) {
				continue
			}
			r, st := parseDecimal(in.row(i), p, s)
			switch st {
			case badSyntax:
				err = invalidInput("numeric", in.row(i))
			case tooLarge:
				err = errNumericRange
			}
			if err != nil {
				break
			}
			out[i] = r
		}
	case types.Bool:
		data = newBitmap(mem, n)
		d := data.Bytes()
		for i := range n {
			if !validAt(valid, i) {
				continue
			}
			b, ok := parseBool(in.row(i))
			if !ok {
				err = invalidInput("boolean", in.row(i))
				break
			}
			if b {
				bitutil.SetBit(d, i)
			}
		}
	default:
		return nil, newError(ErrBadExpression, "cannot cast type text to %s", to)
	}
	if err != nil {
		data.Release()
		return nil, err
	}
	return finish(to.Arrow(), n, nulls, valid, data), nil
}

// TextInputError is the error PostgreSQL gives for s as the text of a value
// of type t (what CAST(s AS t) fails with: ErrInvalidCast, ErrOutOfRange or
// ErrTooLong),
// or nil when s reads as one. Loaders whose own parser refused s use it to
// tell the client what PostgreSQL would.
func TextInputError(t types.Type, s []byte) error {
	var err error
	switch t.ID {
	case types.Int64:
		var v int64
		if v, err = parseInt(s); err == nil {
			if _, e := NarrowInt(t, v); e != nil {
				err = newError(ErrOutOfRange, "value \"%s\" is out of range for type %s", s, t)
			}
		}
	case types.String:
		_, err = NarrowText(t, s)
	case types.Float64:
		var v float64
		if v, err = parseFloat(s); err == nil {
			if _, e := NarrowFloat(t, v); e != nil {
				err = newError(ErrOutOfRange, "\"%s\" is out of range for type %s", s, t)
			}
		}
	case types.Timestamp, types.Date:
		_, err = parseTimestamp(s)
	case types.Decimal:
		switch _, st := parseDecimal(s, int(t.Precision), int(t.Scale)); st {
		case badSyntax:
			err = invalidInput("numeric", s)
		case tooLarge:
			err = errNumericRange
		}
	case types.Bool:
		if _, ok := parseBool(s); !ok {
			err = invalidInput("boolean", s)
		}
	}
	return err
}

func invalidInput(typ string, s []byte) error {
	return newError(ErrInvalidCast, "invalid input syntax for type %s: %q", typ, string(s))
}

// parseInt reads bigint text: optional surrounding spaces and sign, digits only.
func parseInt(s []byte) (int64, error) {
	t := bytes.TrimFunc(s, isSpaceRune)
	v, err := strconv.ParseInt(unsafeString(t), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, newError(ErrOutOfRange, "value %q is out of range for type bigint", string(s))
		}
		return 0, invalidInput("bigint", s)
	}
	return v, nil
}

// parseFloat reads double text, including NaN and [-]Infinity.
func parseFloat(s []byte) (float64, error) {
	t := bytes.TrimFunc(s, isSpaceRune)
	v, err := strconv.ParseFloat(unsafeString(t), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, newError(ErrOutOfRange, "%q is out of range for type double precision", string(s))
		}
		return 0, invalidInput("double precision", s)
	}
	return v, nil
}

// parseBool reads boolean text as PostgreSQL does: any unambiguous prefix of
// true, false, yes, no, on (two letters at least), off (likewise), or 1 and 0,
// in any case.
func parseBool(s []byte) (value, ok bool) {
	t := bytes.TrimFunc(s, isSpaceRune)
	prefix := func(word string, minLen int) bool {
		return len(t) >= minLen && len(t) <= len(word) && bytes.EqualFold(t, []byte(word[:len(t)]))
	}
	switch {
	case len(t) == 0:
		return false, false
	case prefix("true", 1), prefix("yes", 1), prefix("on", 2), string(t) == "1":
		return true, true
	case prefix("false", 1), prefix("no", 1), prefix("off", 2), string(t) == "0":
		return false, true
	}
	return false, false
}

func isSpaceRune(r rune) bool { return r < utf8.RuneSelf && isSpace(byte(r)) }

func floatText(v float64) string { return string(types.AppendFloat(nil, v)) }

const microsPerSecond = 1_000_000

// parseTimestamp reads 'YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]' with optional
// surrounding spaces. A trailing time zone (Z, +hh, -hh:mm) is accepted and
// ignored, as PostgreSQL ignores it for timestamp without time zone. Fractions
// finer than a microsecond are rounded.
func parseTimestamp(s []byte) (int64, error) {
	v, _, err := parseTimestampZone(s)
	return v, err
}

// ParseTimestampTZ reads timestamp with time zone text as parseTimestamp
// does, its zone (UTC without one) applied: the instant in UTC microseconds.
func ParseTimestampTZ(s []byte) (int64, error) {
	return ParseTimestampTZIn(s, time.UTC)
}

// ParseTimestampTZIn reads timestamp with time zone text as
// ParseTimestampTZ does, text without a zone read as the wall time in loc
// (the session's TimeZone): the instant in UTC microseconds. The zone may
// be an offset (+02, -05:30, Z) or a name ('Europe/Paris', 'UTC').
func ParseTimestampTZIn(s []byte, loc *time.Location) (int64, error) {
	v, err := parseTimestampText(s)
	if err != nil {
		return 0, err
	}
	switch {
	case v.zoneName != "":
		loc, _ = types.Zone(v.zoneName) // parseTimestampText checked it
	case v.zoned || isInfinite(v.micros):
		return v.micros - v.offset, nil
	}
	return v.micros - int64(types.LocalOffset(loc, v.micros))*microsPerSecond, nil
}

// parseTimestampZone is parseTimestamp, also returning the offset from UTC
// of the zone the text gives (0 without one), in microseconds.
func parseTimestampZone(s []byte) (int64, int64, error) {
	v, err := parseTimestampText(s)
	return v.micros, v.offset, err
}

type zonedTimestamp struct {
	micros, offset int64
	zoned          bool   // the text gives a zone: offset, or zoneName
	zoneName       string // a zone the text names ('Europe/Paris')
}

func parseTimestampText(s []byte) (zonedTimestamp, error) {
	p := tsParser{s: bytes.TrimFunc(s, isSpaceRune)}
	switch {
	case bytes.EqualFold(p.s, []byte("infinity")) || bytes.EqualFold(p.s, []byte("+infinity")):
		return zonedTimestamp{micros: math.MaxInt64, zoned: true}, nil // no zone moves it
	case bytes.EqualFold(p.s, []byte("-infinity")):
		return zonedTimestamp{micros: math.MinInt64, zoned: true}, nil
	}
	bad := func() (zonedTimestamp, error) { return zonedTimestamp{}, invalidInput("timestamp", s) }
	rangeErr := func() (zonedTimestamp, error) {
		return zonedTimestamp{}, newError(ErrInvalidCast, "date/time field value out of range: %q", string(s))
	}
	y, ok1 := p.number(1, 6)
	okSep1 := p.skip('-')
	mo, ok2 := p.number(1, 2)
	okSep2 := p.skip('-')
	d, ok3 := p.number(1, 2)
	if !ok1 || !ok2 || !ok3 || !okSep1 || !okSep2 {
		return bad()
	}
	var h, mi, sec, micros int
	if !p.done() && p.dateZone() {
		// A date with a zone but no time ('2024-01-02 +00', as JDBC's setDate
		// sends it): midnight, the zone ignored.
	} else if !p.done() {
		if !p.skip('T') && !p.skip('t') {
			if !p.spaces() {
				return bad()
			}
		}
		var ok bool
		if h, ok = p.number(1, 2); !ok || !p.skip(':') {
			return bad()
		}
		if mi, ok = p.number(1, 2); !ok {
			return bad()
		}
		if p.skip(':') {
			if sec, ok = p.number(1, 2); !ok {
				return bad()
			}
			if p.skip('.') {
				if micros, ok = p.fraction(); !ok {
					return bad()
				}
			}
		}
		p.spaces()
		if !p.zone() {
			return bad()
		}
	}
	if !p.done() {
		return bad()
	}
	if y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) ||
		h > 24 || mi > 59 || sec > 60 || (h == 24 && (mi != 0 || sec != 0 || micros != 0)) {
		return rangeErr()
	}
	if p.zoneName != "" {
		if _, err := types.Zone(p.zoneName); err != nil {
			return zonedTimestamp{}, newError(ErrInvalidArgument, "time zone \"%s\" not recognized", strings.ToLower(p.zoneName))
		}
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
	return zonedTimestamp{micros: t.Unix()*microsPerSecond + int64(micros), offset: p.offset, zoned: p.zoned, zoneName: p.zoneName}, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// tsParser scans timestamp text.
type tsParser struct {
	s []byte
	i int
	// offset is the zone's offset from UTC in microseconds (zone), zoned
	// whether the text gave one, zoneName the zone it names instead.
	offset   int64
	zoned    bool
	zoneName string
}

func (p *tsParser) done() bool { return p.i == len(p.s) }

func (p *tsParser) skip(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *tsParser) spaces() bool {
	start := p.i
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
	return p.i > start
}

func (p *tsParser) number(minDigits, maxDigits int) (int, bool) {
	v, n := 0, 0
	for p.i < len(p.s) && n < maxDigits && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		v = v*10 + int(p.s[p.i]-'0')
		p.i++
		n++
	}
	return v, n >= minDigits
}

// fraction reads the digits after the point as microseconds, rounding the rest.
func (p *tsParser) fraction() (int, bool) {
	v, n := 0, 0
	roundUp := false
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		switch {
		case n < 6:
			v = v*10 + int(p.s[p.i]-'0')
		case n == 6:
			roundUp = p.s[p.i] >= '5'
		}
		p.i++
		n++
	}
	for k := n; k < 6; k++ {
		v *= 10
	}
	if roundUp {
		v++
	}
	return v, n > 0
}

// zone skips a time zone suffix; it reports false on a malformed one.
// dateZone reads the rest of the text as blanks and a zone with a sign
// (+hh, -hh:mm, a minus after a blank only) and reports whether it is one; it reads nothing if not.
func (p *tsParser) dateZone() bool {
	start := p.i
	blank := p.spaces()
	// Right after the date a - would continue it: PostgreSQL refuses it.
	if !p.done() && (p.s[p.i] == '+' || blank && p.s[p.i] == '-') && p.zone() && p.done() {
		return true
	}
	p.i = start
	return false
}

func (p *tsParser) zone() bool {
	switch {
	case p.done():
		return true
	case p.skip('Z') || p.skip('z'):
		p.zoned = true
		return true
	case isLetter(p.s[p.i]) && !bytes.EqualFold(p.s[p.i:], []byte("BC")) && !bytes.EqualFold(p.s[p.i:], []byte("AD")):
		// A zone's name, read by ParseTimestampTZIn ('Europe/Paris').
		for _, c := range p.s[p.i:] {
			if !isLetter(c) && c != '/' && c != '_' && c != '+' && c != '-' && (c < '0' || c > '9') {
				return false
			}
		}
		p.zoned, p.zoneName, p.i = true, string(p.s[p.i:]), len(p.s)
		return true
	case p.s[p.i] == '+' || p.s[p.i] == '-':
		sign := int64(1)
		if p.s[p.i] == '-' {
			sign = -1
		}
		p.i++
		h, ok := p.number(1, 2)
		if !ok {
			return false
		}
		var m int
		if p.skip(':') {
			if m, ok = p.number(2, 2); !ok {
				return false
			}
		} else {
			m, _ = p.number(2, 2)
		}
		p.offset = sign * (int64(h)*3600 + int64(m)*60) * microsPerSecond
		p.zoned = true
		return true
	}
	return false
}

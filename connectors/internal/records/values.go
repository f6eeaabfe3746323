// Package records parses the text of records (CSV fields, JSON objects) into the
// typed values of a table's columns and builds Arrow record batches of them. The
// file and kafka connectors share it, so a value reads the same from either.
package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// value is one parsed field of the row being read. Which field holds the value
// depends on the column's type, as in types.Value; s is borrowed from the parser
// until the row is committed.
type value struct {
	null bool
	b    bool
	i    int64 // Int64, and Timestamp in microseconds since the epoch
	f    float64
	d    decimal128.Num
	s    []byte
}

// ErrInvalidUTF8 is the error for text that is not valid UTF-8.
var (
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	errNotNumber   = errors.New("not a number")
)

// parseValue parses the text of a field into a value of type t. Numbers, booleans
// and timestamps may be surrounded by spaces, as PostgreSQL's input functions allow;
// text is taken as it is.
func parseValue(t types.Type, b []byte, v *value, zone *time.Location) error {
	if t.ID == types.String {
		if !utf8.Valid(b) {
			return ErrInvalidUTF8
		}
		v.s = b
		if t.Narrow() {
			var err error
			v.s, err = expr.NarrowText(t, b) // character varying(n), character(n)
			return err
		}
		return nil
	}
	s := b
	if len(s) > 0 && (s[0] <= ' ' || s[len(s)-1] <= ' ') {
		s = bytes.TrimSpace(b)
	}
	var ok bool
	switch t.ID {
	case types.Int64:
		v.i, ok = parseInt(s)
	case types.Float64:
		var err error
		v.f, err = strconv.ParseFloat(string(s), 64)
		ok = err == nil
	case types.Decimal:
		var err error
		if v.d, err = parseDecimal(s, int32(t.Precision), int32(t.Scale)); err != nil {
			return fmt.Errorf("invalid %v %s: %v", t, Quote(b), err)
		}
		ok = true
	case types.Bool:
		v.b, ok = parseBool(s)
	case types.Timestamp:
		if t.OID == types.OIDTimestamptz {
			// With PostgreSQL's zone forms (+02, a name), none read in zone.
			var err error
			v.i, err = expr.ParseTimestampTZIn(s, zone)
			ok = err == nil
			break
		}
		v.i, ok = parseTimestamp(s)
	case types.Date:
		// A date, or a timestamp's date, as PostgreSQL reads one.
		if v.i, ok = parseTimestamp(s); ok {
			const day = 86400 * 1_000_000
			v.i -= ((v.i % day) + day) % day
		}
	}
	if !ok {
		return fmt.Errorf("invalid %v %s", t, Quote(b))
	}
	if t.Narrow() { // smallint, integer, oid, real: their range
		if t.ID == types.Int64 {
			var err error
			v.i, err = expr.NarrowInt(t, v.i)
			return err
		}
		var err error
		v.f, err = expr.NarrowFloat(t, v.f)
		return err
	}
	return nil
}

// Validate checks that b is the text of a value of type t (as ParseField
// parses it), for the columns of a record a query does not read: a record is
// good or bad by all its columns, whichever the query reads.
//
// The common shapes of a plain integer, a decimal that fits and a
// 'YYYY-MM-DD' date are checked without building their values; anything
// else goes through the parser, which has the last word.
func Validate(t types.Type, b []byte) error {
	switch t.ID {
	case types.Int64:
		if t.Narrow() {
			if len(b) > 0 && len(b) <= 4 && digitsOnly(b) { // 4 digits fit a smallint
				return nil
			}
		} else if _, ok := digits8(b); ok || len(b) > 0 && len(b) < 19 && digitsOnly(b) {
			return nil
		}
	case types.Decimal:
		if _, ok := fixedDecimal(b, int32(t.Precision), int32(t.Scale)); ok || fitsDecimal(b, int(t.Precision), int(t.Scale)) {
			return nil
		}
	case types.Date:
		if plainDate(b) {
			return nil
		}
	}
	var v value
	return parseValue(t, b, &v, nil)
}

// digitsOnly reports whether b holds only the digits 0-9.
func digitsOnly(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fitsDecimal reports whether b is digits, optionally signed, with an optional
// fraction of digits, whose integer part has at most prec-scale digits and
// whose fraction at most scale: text DECIMAL(prec, scale) takes as it is.
func fitsDecimal(b []byte, prec, scale int) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	whole, frac, dot := bytes.Cut(b, []byte{'.'})
	return len(whole) > 0 && len(whole) <= prec-scale && digitsOnly(whole) &&
		(!dot || len(frac) > 0 && len(frac) <= scale && digitsOnly(frac))
}

// plainDate reports whether b is the 10 bytes of a valid 'YYYY-MM-DD' date,
// as parseTimestamp takes one.
func plainDate(b []byte) bool {
	_, _, _, ok := plainYMD(b)
	return ok
}

// plainDays returns the days since 1970-01-01 of b when it is the 10 bytes
// of a valid 'YYYY-MM-DD' date, or ok=false for anything else.
func plainDays(b []byte) (days int64, ok bool) {
	y, mo, d, ok := plainYMD(b)
	if !ok {
		return 0, false
	}
	return civilDays(y, mo, d), true
}

// plainYMD returns the year, month and day of b when it is the 10 bytes of a
// valid 'YYYY-MM-DD' date, or ok=false for anything else. It checks the
// digits and dashes eight bytes at a time: it is the hot path of every CSV
// date.
func plainYMD(b []byte) (y, mo, d int, ok bool) {
	const (
		digits = 0x00ff_ff00_ffff_ffff // bytes 0-3 and 5-6: YYYY and MM
		dashes = 0xff00_00ff_0000_0000 // bytes 4 and 7
		zeros  = 0x3030_3030_3030_3030 & digits
		highs  = 0xf0f0_f0f0_f0f0_f0f0 & digits
		sixes  = 0x0606_0606_0606_0606 & digits
	)
	if len(b) != 10 {
		return 0, 0, 0, false
	}
	w := binary.LittleEndian.Uint64(b[:8])
	// A byte is a digit when its high nibble is 3 and adding 6 leaves it 3
	// (no carry crosses bytes: each is 0x30-0x3f once the first test holds).
	dw := w & digits
	if w&dashes != 0x2d00_002d_0000_0000 || dw&highs != zeros || (dw+sixes)&highs != zeros ||
		b[8]-'0' > 9 || b[9]-'0' > 9 {
		return 0, 0, 0, false
	}
	y = int(b[0]-'0')*1000 + int(b[1]-'0')*100 + int(b[2]-'0')*10 + int(b[3]-'0')
	mo = int(b[5]-'0')*10 + int(b[6]-'0')
	d = int(b[8]-'0')*10 + int(b[9]-'0')
	if mo < 1 || mo > 12 || d < 1 || d > 28 && d > daysIn(y, mo) {
		return 0, 0, 0, false
	}
	return y, mo, d, true
}

// Quote quotes a bad value for a log line, cut short if long.
func Quote(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}

// digits8 parses b, of 1 to 8 bytes, as unsigned decimal digits, eight bytes
// at a time: ok=false for anything else, and when b's capacity is under 8
// bytes (it reads b[:8], and ignores what lies past len(b)). It is the hot
// path of a CSV's keys and counts.
func digits8(b []byte) (v uint64, ok bool) {
	const zeros, highs, sixes = 0x3030_3030_3030_3030, 0xf0f0_f0f0_f0f0_f0f0, 0x0606_0606_0606_0606
	if len(b) == 0 || len(b) > 8 || cap(b) < 8 {
		return 0, false
	}
	// The first digit is the lowest byte: shifted up, b fills the high
	// bytes, and '0's the low ones, the leading zeros of an 8-digit number.
	shift := uint(8-len(b)) * 8
	w := binary.LittleEndian.Uint64(b[:8])<<shift | zeros&(1<<shift-1)
	if w&highs != zeros || (w+sixes)&highs != zeros {
		return 0, false
	}
	w -= zeros
	w = (w * 10) + (w >> 8) // each even byte: the two digits from it up
	w = ((w & 0x0000_00ff_0000_00ff) * (100 + 1000000<<32)) + (((w >> 16) & 0x0000_00ff_0000_00ff) * (1 + 10000<<32))
	return w >> 32, true
}

// parseInt parses a decimal BIGINT with an optional sign, refusing overflow.
func parseInt(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

func parseBool(s []byte) (v, ok bool) {
	switch {
	case len(s) == 1:
		switch s[0] {
		case 't', 'T', '1':
			return true, true
		case 'f', 'F', '0':
			return false, true
		}
	case bytes.EqualFold(s, []byte("true")):
		return true, true
	case bytes.EqualFold(s, []byte("false")):
		return false, true
	}
	return false, false
}

// parseDecimal parses a decimal number (digits, an optional fraction and an
// optional exponent) exactly into the unscaled value of DECIMAL(prec, scale),
// rounding extra fraction digits half away from zero as PostgreSQL does. It never
// goes through a float, so 1.005 is 1.01 at scale 2.
func parseDecimal(s []byte, prec, scale int32) (decimal128.Num, error) {
	if n, ok := fixedDecimal(s, prec, scale); ok {
		return n, nil
	}
	if n, ok := parseSmallDecimal(s, prec, scale); ok {
		return n, nil
	}
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	// digits holds the significant digits (without leading zeros) of the number
	// digits * 10^exp.
	var digitBuf [48]byte
	digits := digitBuf[:0]
	exp, seen, i := 0, false, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		seen = true
		if len(digits) > 0 || s[i] != '0' {
			digits = append(digits, s[i])
		}
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			seen = true
			exp--
			if len(digits) > 0 || s[i] != '0' {
				digits = append(digits, s[i])
			}
		}
	}
	if !seen {
		return decimal128.Num{}, errNotNumber
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		e, ok := parseInt(s[i+1:])
		if !ok {
			return decimal128.Num{}, errNotNumber
		}
		// Bound the exponent so the arithmetic below cannot overflow; anything
		// this far out is out of range or rounds to zero anyway.
		exp += int(max(-1000, min(1000, e)))
		i = len(s)
	}
	if i != len(s) {
		return decimal128.Num{}, errNotNumber
	}
	shift := exp + int(scale) // the unscaled value is digits * 10^shift
	roundUp := false
	if shift < 0 {
		keep := len(digits) + shift
		if keep < 0 {
			digits = digits[:0]
		} else {
			roundUp = keep < len(digits) && digits[keep] >= '5'
			digits = digits[:keep]
		}
		shift = 0
	}
	if len(digits)+shift > int(prec) {
		if len(digits) > 0 {
			return decimal128.Num{}, errDecimalRange(prec, scale)
		}
		shift = 0
	}
	var n decimal128.Num
	for len(digits) > 0 {
		// Take up to 18 digits at a time: they fit a uint64.
		k := min(len(digits), 18)
		var chunk uint64
		for _, c := range digits[:k] {
			chunk = chunk*10 + uint64(c-'0')
		}
		n = n.Mul(decimal128.GetScaleMultiplier(k)).Add(decimal128.FromU64(chunk))
		digits = digits[k:]
	}
	if shift > 0 {
		n = n.Mul(decimal128.GetScaleMultiplier(shift))
	}
	if roundUp {
		n = n.Add(decimal128.FromU64(1))
	}
	if !n.FitsInPrecision(prec) {
		return decimal128.Num{}, errDecimalRange(prec, scale)
	}
	if neg {
		n = n.Negate()
	}
	return n, nil
}

// fixedDecimal is parseDecimal's fastest path, for the shape CSV files
// write numbers of a fixed scale in: 1 to 8 digits, a point, and exactly
// scale (1 to 8) digits, whole digits no more than prec-scale; it reads the
// digits eight bytes at a time (digits8, whose capacity rule it shares).
// Anything else gives ok=false, for the other paths to parse or refuse.
func fixedDecimal(b []byte, prec, scale int32) (decimal128.Num, bool) {
	k := len(b) - int(scale) - 1 // the point's place
	if scale < 1 || scale > 8 || k < 1 || k > int(prec-scale) || b[k] != '.' {
		return decimal128.Num{}, false
	}
	whole, ok1 := digits8(b[:k])
	frac, ok2 := digits8(b[k+1:])
	if !ok1 || !ok2 {
		return decimal128.Num{}, false
	}
	return decimal128.FromU64(whole*pow10[scale] + frac), true
}

// pow10[i] is 10 to the i.
var pow10 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}

// parseSmallDecimal is parseDecimal's fast path for the common case: [-]digits
// [. digits], at most 18 digits in all and no more fraction digits than scale
// (no rounding), whose value fits prec. Anything else gives ok=false, for the
// general path to parse or refuse.
func parseSmallDecimal(s []byte, prec, scale int32) (decimal128.Num, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		neg, i = true, 1
	}
	var v uint64
	digits, frac, point := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v*10 + uint64(c-'0')
			digits++
			if point {
				frac++
			}
		case c == '.' && !point:
			point = true
		default:
			return decimal128.Num{}, false
		}
	}
	if digits == 0 || digits > 18 || int32(frac) > scale {
		return decimal128.Num{}, false
	}
	n := decimal128.FromU64(v)
	if k := int(scale) - frac; k > 0 {
		n = n.Mul(decimal128.GetScaleMultiplier(k))
	}
	if !n.FitsInPrecision(prec) {
		return decimal128.Num{}, false
	}
	if neg {
		n = n.Negate()
	}
	return n, true
}

func errDecimalRange(prec, scale int32) error {
	return fmt.Errorf("out of range for decimal(%d,%d)", prec, scale)
}

// parseTimestamp parses 'YYYY-MM-DD', 'YYYY-MM-DD HH:MM[:SS[.ffffff]]' (or with a T
// between date and time) and RFC 3339 timestamps with a zone, which are converted
// to UTC, into microseconds since the epoch. Fractions beyond microseconds round.
func parseTimestamp(s []byte) (int64, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digitsN(s[0:4])
	mo, ok2 := digitsN(s[5:7])
	d, ok3 := digitsN(s[8:10])
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	var h, mi, sec, micros int
	rest := s[10:]
	if len(rest) > 0 {
		if rest[0] != ' ' && rest[0] != 'T' && rest[0] != 't' {
			return 0, false
		}
		rest = rest[1:]
		var ok bool
		if len(rest) < 5 || rest[2] != ':' {
			return 0, false
		}
		h, ok1 = digitsN(rest[0:2])
		mi, ok2 = digitsN(rest[3:5])
		if !ok1 || !ok2 {
			return 0, false
		}
		rest = rest[5:]
		if len(rest) >= 3 && rest[0] == ':' {
			if sec, ok = digitsN(rest[1:3]); !ok {
				return 0, false
			}
			rest = rest[3:]
			if len(rest) > 0 && rest[0] == '.' {
				k := 1
				for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
					k++
				}
				if k == 1 {
					return 0, false
				}
				micros = fraction(rest[1:k])
				rest = rest[k:]
			}
		}
		if len(rest) > 0 {
			return parseZoned(s)
		}
	}
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	secs := civilDays(y, mo, d)*86400 + int64(h*3600+mi*60+sec)
	return secs*1_000_000 + int64(micros), true
}

// daysIn is the number of days of month mo (1-12) of year y, proleptic
// Gregorian, as time.Date's calendar.
func daysIn(y, mo int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civilDays is the number of days from 1970-01-01 to y-mo-d (Howard Hinnant's
// days_from_civil): what time.Date(...).Unix()/86400 gives, without its cost.
func civilDays(y, mo, d int) int64 {
	if mo <= 2 {
		y--
	}
	era := y / 400
	if y < 0 { // year 0's January and February
		era = (y - 399) / 400
	}
	yoe := y - era*400
	m := mo + 9
	if mo > 2 {
		m = mo - 3
	}
	doy := (153*m+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

// parseZoned parses a timestamp with a zone (RFC 3339, or with a space for the T).
func parseZoned(s []byte) (int64, bool) {
	b := []byte(string(s))
	b[10] = 'T'
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, false
	}
	t = t.Add(500 * time.Nanosecond).Truncate(time.Microsecond)
	return t.UnixMicro(), true
}

func digitsN(s []byte) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// fraction returns the microseconds of a second's fraction digits, rounded half up.
func fraction(s []byte) int {
	us := 0
	for i := 0; i < 6; i++ {
		us *= 10
		if i < len(s) {
			us += int(s[i] - '0')
		}
	}
	if len(s) > 6 && s[6] >= '5' {
		us++ // may make a whole second, which the caller's addition carries
	}
	return us
}

// Builder builds the record batches of the projected columns row by row: a
// parser fills the row being read (ParseField, SetNull, JSONParser.Parse) and
// Commit appends it, so a record found bad half-way leaves no trace in the batch.
type Builder struct {
	schema   *arrow.Schema
	types    []types.Type
	builders []array.Builder
	vals     []value // the row being parsed, one per projected column
	rows     int
	bytes    int // input bytes of the rows in the batch
	// zone is where text of a timestamp with time zone without a zone is
	// wall time (SetZone; nil: UTC).
	zone *time.Location
	// block holds the values of the block being parsed a column at a time
	// (ParseColumn), one per column; nil until the first.
	block []blockColumn
}

// SetZone has a timestamp with time zone's text without a zone read as the
// wall time in loc (COPY FROM reads it in the session's TimeZone).
func (bb *Builder) SetZone(loc *time.Location) { bb.zone = loc }

// NewBuilder returns a Builder of batches with columns cols, allocated from alloc.
// Release it when done.
func NewBuilder(alloc memory.Allocator, cols types.Schema) *Builder {
	bb := &Builder{schema: cols.Arrow(), vals: make([]value, len(cols))}
	for _, f := range cols {
		bb.types = append(bb.types, f.Type)
		bb.builders = append(bb.builders, array.NewBuilder(alloc, f.Type.Arrow()))
	}
	return bb
}

// Reset clears the row being read, to start the next one. A parser that sets
// every column of every row (SetNull, SetText or ParseField) need not call it.
func (bb *Builder) Reset() { clear(bb.vals) }

// SetNull makes column i of the row being read NULL.
func (bb *Builder) SetNull(i int) { bb.vals[i].null = true }

// IsNull reports whether column i of the row being read is NULL.
func (bb *Builder) IsNull(i int) bool { return bb.vals[i].null }

// ParseField parses the text of column i of the row being read (see ParseValue's
// rules: numbers, booleans and timestamps may be surrounded by spaces, text is
// taken as it is and must be UTF-8). The row borrows b until Commit.
func (bb *Builder) ParseField(i int, b []byte) error {
	v := &bb.vals[i]
	v.null = false
	return parseValue(bb.types[i], b, v, bb.zone)
}

// SetText makes column i, a text column, of the row being read b, which the
// caller knows is valid UTF-8 (ASCII, say). The row borrows b until Commit.
func (bb *Builder) SetText(i int, b []byte) { bb.vals[i].null, bb.vals[i].s = false, b }

// Commit appends the row being read, which was size bytes of input.
func (bb *Builder) Commit(size int) {
	for i, bld := range bb.builders {
		v := &bb.vals[i]
		if v.null {
			bld.AppendNull()
			continue
		}
		switch b := bld.(type) {
		case *array.BooleanBuilder:
			b.Append(v.b)
		case *array.Int64Builder:
			b.Append(v.i)
		case *array.Float64Builder:
			b.Append(v.f)
		case *array.Decimal128Builder:
			b.Append(v.d)
		case *array.StringBuilder:
			b.BinaryBuilder.Append(v.s)
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v.i))
		}
	}
	bb.rows++
	bb.bytes += size
}

// Rows returns the number of rows committed since the last Flush.
func (bb *Builder) Rows() int { return bb.rows }

// Bytes returns the input bytes of the rows committed since the last Flush.
func (bb *Builder) Bytes() int { return bb.bytes }

// Flush returns the rows committed so far as a batch and starts the next one.
//
// The builders then take room for as many rows again (and as many bytes of
// text), so that a batch like the last one fills them without growing them a
// doubling at a time, each a copy and a clear of what they hold.
func (bb *Builder) Flush() arrow.RecordBatch {
	cols := make([]arrow.Array, len(bb.builders))
	for i, b := range bb.builders {
		cols[i] = b.NewArray()
	}
	rec := array.NewRecordBatch(bb.schema, cols, int64(bb.rows))
	for i, c := range cols {
		bb.builders[i].Reserve(bb.rows)
		if s, ok := c.(*array.String); ok {
			bb.builders[i].(*array.StringBuilder).ReserveData(len(s.ValueBytes()))
		}
		c.Release()
	}
	bb.rows, bb.bytes = 0, 0
	return rec
}

// Release frees the builders' memory; the Builder is not used after.
func (bb *Builder) Release() {
	for _, b := range bb.builders {
		b.Release()
	}
	bb.builders = nil
}

package records

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/types"
)

func TestParseDecimal(t *testing.T) {
	for _, tc := range []struct {
		in         string
		prec, scal int32
		want       string // unscaled, "" for an error
	}{
		{"1.005", 10, 2, "101"}, // via a float this would be 100
		{"-1.005", 10, 2, "-101"},
		{"1.004", 10, 2, "100"},
		{"0.005", 10, 2, "1"},
		{"0.0049", 10, 2, "0"},
		{"0.0005", 10, 2, "0"},
		{"12", 5, 2, "1200"},
		{"+12.", 5, 2, "1200"},
		{".5", 5, 2, "50"},
		{"000123.4500", 7, 2, "12345"},
		{"1e2", 5, 0, "100"},
		{"1.5E-1", 5, 2, "15"},
		{"-0", 5, 2, "0"},
		{"0e999999999999", 5, 2, "0"},
		{"1e-999999999999", 5, 2, "0"},
		{"999.99", 5, 2, "99999"},
		{"999.995", 5, 2, ""}, // rounds to 1000.00, one digit too many
		{"1000", 5, 2, ""},
		{"1e999999999999", 5, 2, ""},
		{"99999999999999999999999999999999999999", 38, 0, "99999999999999999999999999999999999999"},
		{"-12345678901234567890.123456789012345678", 38, 18, "-12345678901234567890123456789012345678"},
		{"999999999999999999999999999999999999999", 38, 0, ""},
		{"", 5, 2, ""},
		{"-", 5, 2, ""},
		{".", 5, 2, ""},
		{"1.2.3", 5, 2, ""},
		{"1e", 5, 2, ""},
		{"1x", 5, 2, ""},
		{"NaN", 5, 2, ""},
	} {
		n, err := parseDecimal([]byte(tc.in), tc.prec, tc.scal)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseDecimal(%q, %d, %d) = %v, want an error", tc.in, tc.prec, tc.scal, n.BigInt())
		case tc.want != "" && err != nil:
			t.Errorf("parseDecimal(%q, %d, %d): %v", tc.in, tc.prec, tc.scal, err)
		case tc.want != "" && n.BigInt().String() != tc.want:
			t.Errorf("parseDecimal(%q, %d, %d) = %v, want %s", tc.in, tc.prec, tc.scal, n.BigInt(), tc.want)
		}
	}
	// Agrees with arrow's own parser where that one is exact.
	for _, s := range []string{"3.14159", "-271.8", "42"} {
		want, _ := decimal128.FromString(s, 20, 4)
		if got, _ := parseDecimal([]byte(s), 20, 4); got != want {
			t.Errorf("parseDecimal(%q) = %v, arrow says %v", s, got.BigInt(), want.BigInt())
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	micros := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	for _, tc := range []struct {
		in   string
		want string // RFC 3339 in UTC, "" for an error
	}{
		{"2024-01-02", "2024-01-02T00:00:00Z"},
		{"2024-01-02 03:04:05", "2024-01-02T03:04:05Z"},
		{"2024-01-02T03:04:05", "2024-01-02T03:04:05Z"},
		{"2024-01-02 03:04", "2024-01-02T03:04:00Z"},
		{"2024-01-02 03:04:05.5", "2024-01-02T03:04:05.5Z"},
		{"2024-01-02 03:04:05.123456", "2024-01-02T03:04:05.123456Z"},
		{"2024-01-02 03:04:05.1234565", "2024-01-02T03:04:05.123457Z"},
		{"2024-01-02 23:59:59.9999999", "2024-01-03T00:00:00Z"},
		{"1969-12-31 23:59:59.5", "1969-12-31T23:59:59.5Z"},
		{"2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"},
		{"2024-01-02T03:04:05.25-01:30", "2024-01-02T04:34:05.25Z"},
		{"2024-01-02 03:04:05+02:00", "2024-01-02T01:04:05Z"},
		{"2024-02-29", "2024-02-29T00:00:00Z"},
		{"2023-02-29", ""},
		{"2024-13-01", ""},
		{"2024-00-01", ""},
		{"2024-01-02 24:00:00", ""},
		{"2024-01-02 03:04:05.", ""},
		{"2024-01-02 03:04:05 junk", ""},
		{"2024-1-2", ""},
		{"20240102", ""},
		{"", ""},
	} {
		got, ok := parseTimestamp([]byte(tc.in))
		switch {
		case tc.want == "" && ok:
			t.Errorf("parseTimestamp(%q) = %d, want an error", tc.in, got)
		case tc.want != "" && !ok:
			t.Errorf("parseTimestamp(%q) failed", tc.in)
		case tc.want != "" && got != micros(tc.want):
			t.Errorf("parseTimestamp(%q) = %v, want %s", tc.in, time.UnixMicro(got).UTC(), tc.want)
		}
	}
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"+7", 7, true}, {"42", 42, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1.0", 0, false}, {"1e3", 0, false}, {"0x10", 0, false},
	} {
		if got, ok := parseInt([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{"t": true, "T": true, "true": true, "TRUE": true, "1": true,
		"f": false, "F": false, "false": false, "False": false, "0": false} {
		if got, ok := parseBool([]byte(in)); !ok || got != want {
			t.Errorf("parseBool(%q) = %v, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "yes", "2", "tru", "truee"} {
		if _, ok := parseBool([]byte(in)); ok {
			t.Errorf("parseBool(%q) succeeded", in)
		}
	}
}

// The calendar arithmetic agrees with time.Date on every day of years 0 to
// 9999 it samples, and refuses the days time.Date would normalise.
func TestCivilDays(t *testing.T) {
	for y := 0; y <= 9999; y += 7 {
		for mo := 1; mo <= 12; mo++ {
			for d := 1; d <= 31; d++ {
				tm := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
				valid := tm.Day() == d
				if (d <= daysIn(y, mo)) != valid {
					t.Fatalf("%04d-%02d-%02d: daysIn says %d", y, mo, d, daysIn(y, mo))
				}
				if valid && civilDays(y, mo, d) != tm.Unix()/86400 {
					t.Fatalf("%04d-%02d-%02d: civilDays %d, time.Date %d", y, mo, d, civilDays(y, mo, d), tm.Unix()/86400)
				}
			}
		}
	}
}

// The fast path of parseDecimal gives what the general one gives, and
// declines what it cannot do alone.
func TestParseSmallDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b []byte
		if rng.IntN(4) == 0 {
			b = append(b, '-')
		}
		for range rng.IntN(12) {
			b = append(b, byte('0'+rng.IntN(10)))
		}
		if rng.IntN(2) == 0 {
			b = append(b, '.')
			for range rng.IntN(5) {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		}
		prec, scale := int32(1+rng.IntN(20)), int32(rng.IntN(5))
		scale = min(scale, prec)
		fast, ok := parseSmallDecimal(b, prec, scale)
		if !ok {
			continue
		}
		slow, err := parseDecimal(append([]byte("+"), b...), prec, scale) // "+" skips the fast path
		if len(b) > 0 && b[0] == '-' {
			slow, err = parseDecimal(b[1:], prec, scale)
			slow = slow.Negate()
		}
		if err != nil || slow != fast {
			t.Fatalf("%q at (%d,%d): fast %v, general %v (%v)", b, prec, scale, fast, slow, err)
		}
	}
}

// TestValidateShortcuts checks Validate's shortcuts against the parser: over
// random texts of digits, signs, points and dashes, each is valid exactly when
// the parser takes it.
func TestValidateShortcuts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	tys := []types.Type{types.Int64Type, types.DecimalType(15, 2), types.DecimalType(4, 0), types.DecimalType(5, 5), types.DateType}
	alphabet := "0123456789012345678901234567890123456789-+.- x"
	valid := 0
	for range 200000 {
		var b []byte
		if r.IntN(3) == 0 { // date-like
			b = fmt.Appendf(nil, "%04d-%02d-%02d", r.IntN(10000), r.IntN(14), r.IntN(33))
		} else {
			for range 1 + r.IntN(22) {
				b = append(b, alphabet[r.IntN(len(alphabet))])
			}
		}
		for _, ty := range tys {
			var v value
			want := parseValue(ty, b, &v, nil) == nil
			if got := Validate(ty, b) == nil; got != want {
				t.Fatalf("Validate(%v, %q) valid=%v, the parser says %v", ty, b, got, want)
			}
			if want {
				valid++
			}
		}
	}
	if valid < 10000 {
		t.Fatalf("only %d valid texts: a test that cannot tell", valid)
	}
}

// TestPlainDays checks the date shortcut against parseTimestamp, the
// reference: over random 10-byte texts, mostly dates, some with a byte just
// outside the digits ('/', ':'), a non-ASCII byte or a misplaced dash,
// plainDays takes exactly the valid 'YYYY-MM-DD' dates, at parseTimestamp's
// day.
func TestPlainDays(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	odd := "/:-. x\x00\xff\xb0"
	taken := 0
	for range 300000 {
		b := fmt.Appendf(nil, "%04d-%02d-%02d", r.IntN(10000), r.IntN(14), r.IntN(33))
		for range r.IntN(3) {
			b[r.IntN(len(b))] = odd[r.IntN(len(odd))]
		}
		days, ok := plainDays(b)
		micros, want := parseTimestamp(b)
		if ok != want || ok && days*86400*1_000_000 != micros {
			t.Fatalf("%q: plainDays %d %v, parseTimestamp %d %v", b, days, ok, micros, want)
		}
		if ok {
			taken++
		}
	}
	if taken < 50000 {
		t.Fatalf("only %d dates taken: a test that cannot tell", taken)
	}
	for _, b := range []string{"", "2024-01-0", "2024-01-011"} {
		if _, ok := plainDays([]byte(b)); ok {
			t.Errorf("%q taken", b)
		}
	}
}

// TestDigits8 checks the eight-byte parser of short integers against
// strconv.ParseUint: over random texts of up to 9 bytes, mostly digits, some
// with a sign, a space or a byte just outside the digits ('/', ':'), each
// followed by bytes it must ignore, digits8 takes exactly the texts of 1 to
// 8 digits, at their value; and never one whose capacity is under 8 bytes.
func TestDigits8(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	odd := "/:-+ x\x00\xff"
	taken := 0
	for range 300000 {
		n := r.IntN(10)
		b := make([]byte, n, n+8)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
			if r.IntN(12) == 0 {
				b[i] = odd[r.IntN(len(odd))]
			}
		}
		for i := n; i < n+8; i++ {
			b[:n+8][i] = byte(r.IntN(256)) // past len: ignored
		}
		v, ok := digits8(b)
		want, err := strconv.ParseUint(string(b), 10, 64)
		wantOK := err == nil && n >= 1 && n <= 8 && strings.Trim(string(b), "0123456789") == ""
		if ok != wantOK || ok && v != want {
			t.Fatalf("%q: %d %v, want %d %v", b, v, ok, want, wantOK)
		}
		if ok {
			taken++
		}
	}
	if taken < 50000 {
		t.Fatalf("only %d taken: a test that cannot tell", taken)
	}
	if _, ok := digits8([]byte("12")[:2:2]); ok {
		t.Error("took a text of capacity 2")
	}
}

// TestFixedDecimal checks the fixed-scale shortcut against parseDecimal's
// general path: over random numbers of digits, a point and digits, some
// signed or with a stray byte, each followed by bytes it must ignore, at
// random precisions and scales, what fixedDecimal takes is what the general
// path gives; and it takes the plain shape it is for.
func TestFixedDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	taken := 0
	for range 200000 {
		var b []byte
		if r.IntN(10) == 0 {
			b = append(b, '-')
		}
		for range r.IntN(10) {
			b = append(b, byte('0'+r.IntN(10)))
		}
		if r.IntN(8) != 0 {
			b = append(b, '.')
		}
		for range r.IntN(10) {
			b = append(b, byte('0'+r.IntN(10)))
		}
		if len(b) > 0 && r.IntN(20) == 0 {
			b[r.IntN(len(b))] = ":/ x"[r.IntN(4)]
		}
		n := len(b)
		b = append(b, "12345678"...)[:n] // past len: ignored
		prec := int32(1 + r.IntN(20))
		scale := min(int32(r.IntN(9)), prec)
		fast, ok := fixedDecimal(b, prec, scale)
		if !ok {
			continue
		}
		taken++
		slow, err := parseDecimal(append([]byte("+"), b...), prec, scale) // "+" skips the shortcuts
		if err != nil || slow != fast {
			t.Fatalf("%q at (%d,%d): fixedDecimal %v, general %v (%v)", b, prec, scale, fast, slow, err)
		}
	}
	if taken < 2000 {
		t.Fatalf("only %d taken: a test that cannot tell", taken)
	}
	if v, ok := fixedDecimal(append([]byte("17954.55"), "xxxxxxxx"...)[:8], 15, 2); !ok || v != decimal128.FromU64(1795455) {
		t.Errorf("17954.55 at (15,2): %v %v", v, ok)
	}
}

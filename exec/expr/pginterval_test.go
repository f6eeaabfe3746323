package expr

import (
	"testing"

	"github.com/hummer-db/hummer/exec/types"
)

// TestIntervalText: interval input read as PostgreSQL 15 reads it, printed
// as it prints it (psql against PostgreSQL gave the wanted text).
func TestIntervalText(t *testing.T) {
	for in, want := range map[string]string{
		"1 day 02:03:04": "1 day 02:03:04", "1 hour": "01:00:00", "2 hours 30 minutes": "02:30:00",
		"-1 year 2 mons": "-10 mons", "1.5 days": "1 day 12:00:00", "@ 3 days ago": "-3 days",
		"90 seconds": "00:01:30", "10": "00:00:10", "0": "00:00:00", "1 mon -1 day": "1 mon -1 days",
		"-1 day +01:00": "-1 days +01:00:00", "00:00:00.5": "00:00:00.5", "1 week": "7 days",
		"1 year 2 mons -3 days 01:02:03.5": "1 year 2 mons -3 days +01:02:03.5", "2 hours ago": "-02:00:00",
		"100:00": "100:00:00", "1 month": "1 mon", "25 months": "2 years 1 mon", "-00:00:01": "-00:00:01",
		"1 day -00:00:01": "1 day -00:00:01",
	} {
		got, err := intervalText(nil, []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "abc", "1 fortnight", "1:2:3:4", "ago"} {
		if _, err := intervalText(nil, []byte(bad)); err == nil {
			t.Errorf("%q: read, want an error", bad)
		}
	}
}

// TestHeldTypesText: timestamptz and bytea text output, as PostgreSQL's (TimeZone UTC).
func TestHeldTypesText(t *testing.T) {
	if got := string(types.AppendTimestamptz(nil, 1704164645123456)); got != "2024-01-02 03:04:05.123456+00" {
		t.Errorf("timestamptz: %q", got)
	}
	if got := string(types.AppendBytea(nil, "\x00\x01\xff")); got != `\x0001ff` {
		t.Errorf("bytea: %q", got)
	}
	for in, want := range map[string]string{`\x0102`: "\x01\x02", `\x0A 0b`: "\x0a\x0b", `ab\\c\001`: "ab\\c\x01", "é": "é"} {
		got, err := appendByteaInput(nil, []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("bytea %q: %q, %v; want %q", in, got, err, want)
		}
	}
}

package types

import (
	"testing"
	"time"
)

// TestZone: TimeZone values read as PostgreSQL 15 reads them; each want is
// the text PostgreSQL printed for '2024-01-01 12:00+00'::timestamptz with
// SET TIME ZONE to the value (POSIX offsets count west of Greenwich).
func TestZone(t *testing.T) {
	noon := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	for _, c := range []struct{ zone, want string }{
		{"UTC", "2024-01-01 12:00:00+00"},
		{"UTC+3", "2024-01-01 09:00:00-03"},
		{"+02:00", "2024-01-01 10:00:00-02"},
		{"<+07>-07", "2024-01-01 19:00:00+07"},
		{"<-03:30>+03:30", "2024-01-01 08:30:00-03:30"},
		{"Asia/Kolkata", "2024-01-01 17:30:00+05:30"},
		{"europe/paris", "2024-01-01 13:00:00+01"},
	} {
		loc, err := Zone(c.zone)
		if err != nil {
			t.Errorf("%s: %v", c.zone, err)
			continue
		}
		if got := string(AppendTimestamptzIn(nil, noon, loc)); got != c.want {
			t.Errorf("%s: %s, want %s", c.zone, got, c.want)
		}
	}
	// PostgreSQL: 1900-01-01 12:00:00+00:19:32 in Europe/Amsterdam (its
	// local mean time).
	ams, _ := Zone("Europe/Amsterdam")
	local := time.Date(1900, 1, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	at := local - int64(LocalOffset(ams, local))*microsPerSecond
	if got := string(AppendTimestamptzIn(nil, at, ams)); got != "1900-01-01 12:00:00+00:19:32" {
		t.Errorf("Amsterdam 1900: %s", got)
	}
	for _, bad := range []string{"Mars/Olympus", "UT+3", "+3x"} {
		if _, err := Zone(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

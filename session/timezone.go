package session

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hummer-db/hummer/exec/types"
)

// checkTimeZone reads a TimeZone as PostgreSQL 15 does, for the forms it can
// check without PostgreSQL's own zone files: an IANA zone name in any case
// ('europe/paris' is shown as PostgreSQL shows it, 'Europe/Paris'), a
// number of hours east of Greenwich (7 is '<+07>-07', -3.5 '<-03:30>+03:30'),
// and a POSIX offset with an optional abbreviation ('+02:00', 'UTC+3').
func checkTimeZone(_ *Session, p *param, v string) (string, error) {
	t := strings.TrimSpace(v)
	if t == "" || strings.EqualFold(t, "local") {
		return "", invalidValue(p, v, "") // Go's name for the machine's zone, not PostgreSQL's
	}
	if h, err := strconv.ParseFloat(t, 64); err == nil {
		if math.Abs(h) > 168 || math.IsNaN(h) {
			return "", invalidValue(p, v, "")
		}
		return hoursZone(h), nil
	}
	if posixOffset(t) {
		return t, nil
	}
	for _, name := range zoneSpellings(t) {
		if _, err := time.LoadLocation(name); err == nil {
			return name, nil
		}
	}
	return "", invalidValue(p, v, "")
}

// hoursZone is PostgreSQL's name for the zone h hours east of Greenwich:
// its POSIX form, whose offset counts west.
func hoursZone(h float64) string {
	secs := int64(math.Round(h * 3600))
	east := func(s int64, sign string) string {
		hh, mm, ss := s/3600, s/60%60, s%60
		out := fmt.Sprintf("%s%02d", sign, hh)
		if mm != 0 || ss != 0 {
			out += fmt.Sprintf(":%02d", mm)
		}
		if ss != 0 {
			out += fmt.Sprintf(":%02d", ss)
		}
		return out
	}
	if secs < 0 {
		return "<" + east(-secs, "-") + ">" + east(-secs, "+")
	}
	return "<" + east(secs, "+") + ">" + east(secs, "-")
}

// posixOffset reports whether s is [abbreviation][+|-]hh[:mm[:ss]], the
// abbreviation three letters or more.
func posixOffset(s string) bool {
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	if i > 0 && i < 3 {
		return false
	}
	rest := s[i:]
	if rest == "" {
		return false
	}
	if rest[0] == '+' || rest[0] == '-' {
		rest = rest[1:]
	} else if i == 0 {
		return false // a bare number is hours (checkTimeZone)
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 {
		return false
	}
	for k, part := range parts {
		if len(part) == 0 || len(part) > 2 || k > 0 && len(part) != 2 {
			return false
		}
		for _, c := range part {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// zoneSpellings are the spellings of an IANA zone name to try, since
// PostgreSQL finds a zone in any case and Go only in the file's: as written,
// each part capitalised (America/New_York), and those with the parts after
// the first upper case (Etc/UTC), or all upper case (EST5EDT, CET).
func zoneSpellings(name string) []string {
	capital := func(part string) string {
		b := []byte(strings.ToLower(part))
		up := true
		for i, c := range b {
			if up && c >= 'a' && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
			up = c == '_' || c == '-' || c == '/'
		}
		return string(b)
	}
	out := []string{name, capital(name)}
	if first, rest, ok := strings.Cut(name, "/"); ok {
		out = append(out, capital(first)+"/"+strings.ToUpper(rest))
	}
	return append(out, strings.ToUpper(name))
}

// TimeZone returns the location of the session's TimeZone (wire.Zoner): a
// timestamp with time zone prints as its wall time there, and text without
// a zone reads as wall time there.
func (s *Session) TimeZone() *time.Location {
	loc, err := types.Zone(s.vars["timezone"])
	if err != nil {
		return time.UTC // checkTimeZone let through only zones Zone reads
	}
	return loc
}

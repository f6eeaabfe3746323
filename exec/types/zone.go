package types

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Time zones, as PostgreSQL's TimeZone setting names them and as a
// timestamp with time zone prints in one.

// zones caches the locations Zone has read, by name.
var zones sync.Map

// Zone returns the location a TimeZone value names, as PostgreSQL reads it:
// an IANA name ('Europe/Paris', as the session checked and spelt it), a
// POSIX zone with an offset counting west of Greenwich ('UTC+3' and '+03'
// are three hours west, '<+07>-07' seven hours east, as SET TIME ZONE 7
// writes it). UTC (and the empty name) is time.UTC.
func Zone(name string) (*time.Location, error) {
	if name == "" || strings.EqualFold(name, "UTC") {
		return time.UTC, nil
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := readZone(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

func readZone(name string) (*time.Location, error) {
	posix := name
	if strings.HasPrefix(name, "<") {
		// <+07>-07: the abbreviation in brackets, then the POSIX offset.
		if end := strings.IndexByte(name, '>'); end > 0 {
			posix = name[end+1:]
		}
	} else {
		posix = strings.TrimLeft(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
		if len(name)-len(posix) > 0 && len(name)-len(posix) < 3 {
			posix = name // an abbreviation has three letters or more
		}
	}
	if west, ok := posixSeconds(posix); ok && (posix != name || posix[0] == '+' || posix[0] == '-') {
		return time.FixedZone(name, -west), nil
	}
	if loc, err := time.LoadLocation(name); err == nil {
		return loc, nil
	}
	return nil, fmt.Errorf("time zone %q not recognized", name)
}

// posixSeconds reads [+|-]hh[:mm[:ss]] as seconds.
func posixSeconds(s string) (int, bool) {
	sign := 1
	if s != "" && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
	}
	parts := strings.Split(s, ":")
	if s == "" || len(parts) > 3 {
		return 0, false
	}
	secs := 0
	for k, part := range parts {
		v, err := strconv.Atoi(part)
		if err != nil || part[0] == '+' || part[0] == '-' || len(part) > 2 || k > 0 && len(part) != 2 {
			return 0, false
		}
		secs += v * []int{3600, 60, 1}[k]
	}
	return sign * secs, true
}

// ZoneOffset returns the offset from UTC, in seconds, of loc at the instant
// micros (microseconds since the epoch).
func ZoneOffset(loc *time.Location, micros int64) int {
	if loc == time.UTC || loc == nil {
		return 0
	}
	secs := micros / microsPerSecond
	if micros%microsPerSecond < 0 {
		secs--
	}
	_, off := time.Unix(secs, 0).In(loc).Zone()
	return off
}

// LocalOffset returns the offset from UTC, in seconds, that loc has at the
// wall-clock time local (microseconds since the epoch of loc's clock), as
// PostgreSQL's DetermineTimeZoneOffset resolves it: an ambiguous time (the
// clock set back) is the later of its two instants, a time the clock
// skipped is read with the offset before the change.
func LocalOffset(loc *time.Location, local int64) int {
	if loc == time.UTC || loc == nil {
		return 0
	}
	const day = 86400 * microsPerSecond
	before, after := ZoneOffset(loc, local-day), ZoneOffset(loc, local+day)
	if ZoneOffset(loc, local-int64(after)*microsPerSecond) == after {
		return after
	}
	return before
}

// AppendTimestamptzIn appends micros (microseconds since the epoch) as
// PostgreSQL prints a timestamp with time zone with TimeZone loc: the wall
// time there, then its offset as +hh, +hh:mm or +hh:mm:ss.
func AppendTimestamptzIn(dst []byte, micros int64, loc *time.Location) []byte {
	if micros == math.MaxInt64 || micros == math.MinInt64 {
		return AppendTimestamp(dst, micros) // infinity has no zone
	}
	off := ZoneOffset(loc, micros)
	dst = AppendTimestamp(dst, micros+int64(off)*microsPerSecond)
	bc := bytes.HasSuffix(dst, []byte(" BC"))
	if bc {
		dst = dst[:len(dst)-3]
	}
	dst = AppendZoneOffset(dst, off)
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// AppendZoneOffset appends an offset east of UTC in seconds as PostgreSQL
// prints it after a time: +hh, +hh:mm when not whole hours, +hh:mm:ss when
// not whole minutes.
func AppendZoneOffset(dst []byte, off int) []byte {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	dst = appendPadded(append(dst, sign), off/3600, 2)
	if off%3600 != 0 {
		dst = appendPadded(append(dst, ':'), off/60%60, 2)
	}
	if off%60 != 0 {
		dst = appendPadded(append(dst, ':'), off%60, 2)
	}
	return dst
}

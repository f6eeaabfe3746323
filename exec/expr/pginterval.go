package expr

import (
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/types"
)

// Intervals (types.IntervalType) are held as their PostgreSQL output text:
// a cast from text reads interval input (ParseInterval) and writes that
// text; arithmetic with timestamps reads its months and, days being 24
// hours in UTC, its microseconds ($interval_months, $interval_micros).

// intervalUnits are the units of interval input, by the months, days and
// microseconds one of each is.
var intervalUnits = func() map[string][3]float64 {
	m := map[string][3]float64{}
	add := func(v [3]float64, names ...string) {
		for _, n := range names {
			m[n] = v
		}
	}
	add([3]float64{0, 0, 1}, "microsecond", "microseconds", "us", "usec", "usecs", "microsecon")
	add([3]float64{0, 0, 1e3}, "millisecond", "milliseconds", "ms", "msec", "msecs", "millisecon")
	add([3]float64{0, 0, 1e6}, "second", "seconds", "s", "sec", "secs")
	add([3]float64{0, 0, 60e6}, "minute", "minutes", "m", "min", "mins")
	add([3]float64{0, 0, 3600e6}, "hour", "hours", "h", "hr", "hrs")
	add([3]float64{0, 1, 0}, "day", "days", "d")
	add([3]float64{0, 7, 0}, "week", "weeks", "w")
	add([3]float64{1, 0, 0}, "month", "months", "mon", "mons")
	add([3]float64{12, 0, 0}, "year", "years", "y", "yr", "yrs")
	add([3]float64{120, 0, 0}, "decade", "decades")
	add([3]float64{1200, 0, 0}, "century", "centuries")
	add([3]float64{12000, 0, 0}, "millennium", "millennia")
	return m
}()

// ParseInterval reads PostgreSQL's interval input in its postgres form:
// an optional @, then numbers (fractions allowed) each with a unit (a bare
// number is seconds), and a time [-]HH:MM[:SS[.f]], in any order, then an
// optional ago that negates it all. Fractions of a month become days (30 a
// month) and fractions of a day microseconds, as in PostgreSQL.
func ParseInterval(s []byte) (months, days int32, micros int64, err error) {
	bad := func() error {
		return newError(ErrInvalidCast, "invalid input syntax for type interval: \"%s\"", s)
	}
	fields := strings.Fields(strings.ToLower(string(s)))
	if len(fields) > 0 && fields[0] == "@" {
		fields = fields[1:]
	}
	ago := len(fields) > 0 && fields[len(fields)-1] == "ago"
	if ago {
		fields = fields[:len(fields)-1]
	}
	if len(fields) == 0 {
		return 0, 0, 0, bad()
	}
	var mo, d, us float64
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Contains(f, ":") {
			t, ok := parseIntervalTime(f)
			if !ok {
				return 0, 0, 0, bad()
			}
			us += t
			continue
		}
		// A number, its unit glued to it (1day) or the next field.
		k := 0
		for k < len(f) && (f[k] >= '0' && f[k] <= '9' || f[k] == '.' || f[k] == '-' || f[k] == '+') {
			k++
		}
		v, perr := strconv.ParseFloat(f[:k], 64)
		if perr != nil {
			return 0, 0, 0, bad()
		}
		unit := f[k:]
		if unit == "" && i+1 < len(fields) {
			if _, isUnit := intervalUnits[fields[i+1]]; isUnit {
				i++
				unit = fields[i]
			}
		}
		if unit == "" {
			unit = "second"
		}
		u, ok := intervalUnits[unit]
		if !ok {
			return 0, 0, 0, bad()
		}
		mo += v * u[0]
		d += v * u[1]
		us += v * u[2]
	}
	// Cascade fractions down: months to days, days to microseconds.
	wholeMo := math.Trunc(mo)
	d += (mo - wholeMo) * 30
	wholeD := math.Trunc(d)
	us += (d - wholeD) * 86400e6
	if ago {
		wholeMo, wholeD, us = -wholeMo, -wholeD, -us
	}
	if math.Abs(wholeMo) > math.MaxInt32 || math.Abs(wholeD) > math.MaxInt32 || math.Abs(us) > math.MaxInt64/2 {
		return 0, 0, 0, newError(ErrOutOfRange, "interval out of range")
	}
	return int32(wholeMo), int32(wholeD), int64(math.Round(us)), nil
}

// parseIntervalTime reads [-|+]HH:MM[:SS[.f]] as microseconds.
func parseIntervalTime(f string) (float64, bool) {
	neg := strings.HasPrefix(f, "-")
	f = strings.TrimLeft(f, "+-")
	parts := strings.Split(f, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	var total float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || (i < len(parts)-1 && strings.Contains(p, ".")) {
			return 0, false
		}
		total += v * [3]float64{3600e6, 60e6, 1e6}[i]
	}
	if neg {
		total = -total
	}
	return total, true
}

// intervalText is the interval text s reads as, normalised to its output.
func intervalText(dst, s []byte) ([]byte, error) {
	mo, d, us, err := ParseInterval(s)
	if err != nil {
		return nil, err
	}
	return types.AppendInterval(dst, mo, d, us), nil
}

// evalIntervalPart is $interval_months(iv) and $interval_micros(iv) (its
// days and time, a day 24 hours long), $interval_days(iv) (its days, as
// microseconds) and $interval_time(iv) (its time).
func evalIntervalPart(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		mo, d, us, err := ParseInterval(in.row(i))
		if err != nil {
			data.Release()
			releaseBuffer(valid)
			return nil, err
		}
		switch c.e.Func {
		case "$interval_months":
			out[i] = int64(mo)
		case "$interval_days": // as microseconds
			out[i] = int64(d) * microsPerDay
		case "$interval_time":
			out[i] = us
		default:
			out[i] = int64(d)*microsPerDay + us
		}
	}
	return finish(types.Int64Type.Arrow(), c.n, nulls, valid, data), nil
}

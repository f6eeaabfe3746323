package expr

import (
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// Date and time functions over timestamps (microseconds since 1970-01-01,
// without time zone, read as UTC):
//
//	date_trunc(unit, ts)    ts truncated to the unit, as PostgreSQL's
//	$date_part(field, ts)   an integer field of ts (EXTRACT, YEAR(), ...)
//	$add_micros(ts, n)      ts plus n microseconds (ts + INTERVAL n DAY, ...)
//	$add_months(ts, n)      ts plus n months, the day clamped to the month's
//	                        last (2020-01-31 + 1 month is 2020-02-29)
//
// The $ functions are the binder's spellings of SQL syntax.

func tsTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

// truncUnits are date_trunc's units, PostgreSQL's names and plurals.
func truncate(unit string, t time.Time) (time.Time, bool) {
	y, m, d := t.Date()
	switch strings.TrimSuffix(strings.ToLower(unit), "s") {
	case "microsecond":
		return t, true
	case "millisecond":
		return t.Truncate(time.Millisecond), true
	case "second":
		return t.Truncate(time.Second), true
	case "minute":
		return t.Truncate(time.Minute), true
	case "hour":
		return t.Truncate(time.Hour), true
	case "day":
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), true
	case "week": // ISO weeks start on Monday
		day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		back := (int(day.Weekday()) + 6) % 7
		return day.AddDate(0, 0, -back), true
	case "month":
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC), true
	case "quarter":
		return time.Date(y, (m-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC), true
	case "year":
		return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC), true
	case "decade":
		return time.Date(floorDiv(y, 10)*10, 1, 1, 0, 0, 0, 0, time.UTC), true
	case "century":
		return time.Date(floorDiv(y-1, 100)*100+1, 1, 1, 0, 0, 0, 0, time.UTC), true
	case "millennium", "millennia", "millenium":
		return time.Date(floorDiv(y-1, 1000)*1000+1, 1, 1, 0, 0, 0, 0, time.UTC), true
	}
	return t, false
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// datePart returns an integer field of t.
func datePart(field string, t time.Time) (int64, bool) {
	switch strings.ToLower(field) {
	case "year":
		return int64(t.Year()), true
	case "quarter":
		return int64((t.Month()-1)/3 + 1), true
	case "month":
		return int64(t.Month()), true
	case "week":
		_, w := t.ISOWeek()
		return int64(w), true
	case "day":
		return int64(t.Day()), true
	case "hour":
		return int64(t.Hour()), true
	case "minute":
		return int64(t.Minute()), true
	case "second":
		return int64(t.Second()), true
	case "microsecond", "microseconds":
		return int64(t.Second())*1e6 + int64(t.Nanosecond()/1e3), true
	case "millisecond", "milliseconds":
		return int64(t.Second())*1e3 + int64(t.Nanosecond()/1e6), true
	case "dow":
		return int64(t.Weekday()), true
	case "isodow":
		return int64((int(t.Weekday())+6)%7 + 1), true
	case "doy":
		return int64(t.YearDay()), true
	case "isoyear":
		y, _ := t.ISOWeek()
		return int64(y), true
	case "epoch":
		return t.Unix(), true
	case "decade":
		return int64(floorDiv(t.Year(), 10)), true
	case "century":
		return int64(floorDiv(t.Year()-1, 100) + 1), true
	case "millennium":
		return int64(floorDiv(t.Year()-1, 1000) + 1), true
	}
	return 0, false
}

// addMonths adds n months to t, clamping the day to the new month's last.
func addMonths(t time.Time, n int64) time.Time {
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m-1) + n
	ny, nm := int(floorDiv64(total, 12)), time.Month(total-floorDiv64(total, 12)*12+1)
	last := time.Date(ny, nm+1, 0, 0, 0, 0, 0, time.UTC).Day()
	d = min(d, last)
	return time.Date(ny, nm, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

func floorDiv64(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// evalDateTrunc is date_trunc(unit, ts).
func evalDateTrunc(c *call) (arrow.Array, error) {
	return mapTimestamps(c, types.TimestampType.Arrow(), func(unit string, t time.Time) (int64, bool) {
		r, ok := truncate(unit, t)
		return r.UnixMicro(), ok
	})
}

// evalDatePart is $date_part(field, ts).
func evalDatePart(c *call) (arrow.Array, error) {
	return mapTimestamps(c, arrow.PrimitiveTypes.Int64, datePart)
}

// mapTimestamps computes f(unit, ts) of each row of (unit text, ts), a value
// of type dt; f's false names a unit it does not know.
func mapTimestamps(c *call, dt arrow.DataType, f func(unit string, t time.Time) (int64, bool)) (arrow.Array, error) {
	units := textOf(c.args[0])
	ts := int64Arg(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		v, ok := f(string(units.row(i)), tsTime(ts.at(i)))
		if !ok {
			data.Release()
			releaseBuffer(valid)
			return nil, newError(ErrInvalidArgument, "unit \"%s\" not recognized for type timestamp", units.row(i))
		}
		out[i] = v
	}
	return finish(dt, c.n, nulls, valid, data), nil
}

// evalAddInterval is $add_micros(ts, n) and $add_months(ts, n).
func evalAddInterval(c *call) (arrow.Array, error) {
	ts, ns := int64Arg(c.args[0]), int64Arg(c.args[1])
	months := c.e.Func == "$add_months"
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		if months {
			out[i] = addMonths(tsTime(ts.at(i)), ns.at(i)).UnixMicro()
		} else {
			out[i] = ts.at(i) + ns.at(i)
		}
	}
	return finish(types.TimestampType.Arrow(), c.n, nulls, valid, data), nil
}

// releaseBuffer releases b unless it is nil.
func releaseBuffer(b *memory.Buffer) {
	if b != nil {
		b.Release()
	}
}

// microsPerDay is a day's length in microseconds.
const microsPerDay = 86400 * 1_000_000

// midnight is the start of the day of ts: the DATE of a timestamp.
func midnight(ts int64) int64 { return floorDiv64(ts, microsPerDay) * microsPerDay }

// evalDaysBetween is $days_between(a, b): the whole days from b to a (date -
// date; both are midnights).
func evalDaysBetween(c *call) (arrow.Array, error) {
	a, b := int64Arg(c.args[0]), int64Arg(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if validAt(valid, i) {
			out[i] = floorDiv64(a.at(i)-b.at(i), microsPerDay)
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// toCharPatterns are to_char's template patterns for timestamps, longest
// first so that a prefix does not match in their place.
var toCharPatterns = []string{"YYYY", "HH24", "HH12", "MONTH", "Month", "month", "DAY", "Day", "day",
	"DDD", "MON", "Mon", "mon", "DY", "Dy", "dy", "YY", "MM", "DD", "HH", "MI", "SS", "MS", "US", "AM", "PM", "am", "pm", "Q", "D"}

// toChar formats t by a PostgreSQL to_char template: the patterns above (FM
// before one drops its padding), "double-quoted" text as is, anything else
// copied.
func toChar(t time.Time, tmpl string) string {
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		if tmpl[i] == '"' {
			j := strings.IndexByte(tmpl[i+1:], '"')
			if j < 0 {
				b.WriteString(tmpl[i+1:])
				break
			}
			b.WriteString(tmpl[i+1 : i+1+j])
			i += j + 2
			continue
		}
		fill := false
		if strings.HasPrefix(tmpl[i:], "FM") || strings.HasPrefix(tmpl[i:], "fm") {
			fill = true
			i += 2
		}
		matched := ""
		for _, p := range toCharPatterns {
			if strings.HasPrefix(tmpl[i:], p) {
				matched = p
				break
			}
		}
		if matched == "" {
			b.WriteByte(tmpl[i])
			i++
			continue
		}
		i += len(matched)
		num := func(v, width int) {
			s := strconv.Itoa(v)
			if !fill {
				for len(s) < width {
					s = "0" + s
				}
			}
			b.WriteString(s)
		}
		name := func(s string, width int, upper, lower bool) {
			switch {
			case upper:
				s = strings.ToUpper(s)
			case lower:
				s = strings.ToLower(s)
			}
			if !fill {
				for len(s) < width {
					s += " "
				}
			}
			b.WriteString(s)
		}
		h12 := t.Hour() % 12
		if h12 == 0 {
			h12 = 12
		}
		switch matched {
		case "YYYY":
			num(t.Year(), 4)
		case "YY":
			num(t.Year()%100, 2)
		case "MM":
			num(int(t.Month()), 2)
		case "DD":
			num(t.Day(), 2)
		case "DDD":
			num(t.YearDay(), 3)
		case "D":
			num(int(t.Weekday())+1, 1)
		case "Q":
			num((int(t.Month())-1)/3+1, 1)
		case "HH24":
			num(t.Hour(), 2)
		case "HH12", "HH":
			num(h12, 2)
		case "MI":
			num(t.Minute(), 2)
		case "SS":
			num(t.Second(), 2)
		case "MS":
			num(t.Nanosecond()/1e6, 3)
		case "US":
			num(t.Nanosecond()/1e3, 6)
		case "AM", "PM", "am", "pm":
			m := "AM"
			if t.Hour() >= 12 {
				m = "PM"
			}
			if matched[0] >= 'a' {
				m = strings.ToLower(m)
			}
			b.WriteString(m)
		case "MONTH", "Month", "month":
			name(t.Month().String(), 9, matched == "MONTH", matched == "month")
		case "MON", "Mon", "mon":
			name(t.Month().String()[:3], 3, matched == "MON", matched == "mon")
		case "DAY", "Day", "day":
			name(t.Weekday().String(), 9, matched == "DAY", matched == "day")
		case "DY", "Dy", "dy":
			name(t.Weekday().String()[:3], 3, matched == "DY", matched == "dy")
		}
	}
	return b.String()
}

// evalToChar is to_char(ts, template) and date_format(ts, format).
func evalToChar(c *call) (arrow.Array, error) {
	ts, tmpls := int64Arg(c.args[0]), textOf(c.args[1])
	format := toChar
	if c.e.Func == "date_format" {
		format = dateFormat
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, c.n*16)
	for i := range c.n {
		if validAt(valid, i) {
			sb.writeString(format(tsTime(ts.at(i)), string(tmpls.row(i))))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// dateFormat formats t by a MySQL DATE_FORMAT format: %Y %y %m %c %d %e %H %k
// %h %I %l %i %s %S %f %p %M %b %W %a %j %%; other characters as they are.
//
// A format without % is Flink's, a Java SimpleDateFormat pattern
// (javaDateFormat): DATE_FORMAT(ts, 'yyyy-MM-dd') as the Nexmark suite writes.
func dateFormat(t time.Time, format string) string {
	if !strings.Contains(format, "%") {
		return javaDateFormat(t, format)
	}
	var b strings.Builder
	pad := func(v, w int) {
		s := strconv.Itoa(v)
		for len(s) < w {
			s = "0" + s
		}
		b.WriteString(s)
	}
	h12 := t.Hour() % 12
	if h12 == 0 {
		h12 = 12
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			pad(t.Year(), 4)
		case 'y':
			pad(t.Year()%100, 2)
		case 'm':
			pad(int(t.Month()), 2)
		case 'c':
			b.WriteString(strconv.Itoa(int(t.Month())))
		case 'd':
			pad(t.Day(), 2)
		case 'e':
			b.WriteString(strconv.Itoa(t.Day()))
		case 'H':
			pad(t.Hour(), 2)
		case 'k':
			b.WriteString(strconv.Itoa(t.Hour()))
		case 'h', 'I':
			pad(h12, 2)
		case 'l':
			b.WriteString(strconv.Itoa(h12))
		case 'i':
			pad(t.Minute(), 2)
		case 's', 'S':
			pad(t.Second(), 2)
		case 'f':
			pad(t.Nanosecond()/1e3, 6)
		case 'p':
			if t.Hour() >= 12 {
				b.WriteString("PM")
			} else {
				b.WriteString("AM")
			}
		case 'M':
			b.WriteString(t.Month().String())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'W':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'j':
			pad(t.YearDay(), 3)
		default: // %% and unknown specifiers: the character itself
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

// secondsType and epochType are the types of EXTRACT(SECOND ...) and
// EXTRACT(EPOCH ...): numerics with microseconds, as PostgreSQL's.
var (
	secondsType = types.DecimalType(8, 6)
	epochType   = types.DecimalType(18, 6)
)

// evalSecondsPart is $date_part_seconds(ts) and $date_part_epoch(ts): the
// seconds (with their fraction) of ts's minute, or since 1970.
func evalSecondsPart(c *call) (arrow.Array, error) {
	ts := int64Arg(c.args[0])
	epoch := c.e.Func == "$date_part_epoch"
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[num](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		us := ts.at(i)
		if !epoch {
			us = us - floorDiv64(us, 60_000_000)*60_000_000 // within the minute
		}
		out[i] = decimal128.FromI64(us) // microseconds: the value at scale 6
	}
	t := secondsType
	if epoch {
		t = epochType
	}
	return finish(t.Arrow(), c.n, nulls, valid, data), nil
}

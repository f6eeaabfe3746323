package expr

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/types"
)

// Interval arithmetic and comparison, as PostgreSQL 15's interval_pl,
// interval_mi, interval_mul, timestamp_mi and interval_cmp_value compute
// them, over intervals held as their output text (pginterval.go).

// evalIntervalKey is $interval_key(iv): the microseconds PostgreSQL compares
// intervals by, a month 30 days and a day 24 hours ('1 mon' = '30 days').
func evalIntervalKey(c *call) (arrow.Array, error) {
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
		out[i] = (int64(mo)*30+int64(d))*microsPerDay + us
	}
	return finish(types.Int64Type.Arrow(), c.n, nulls, valid, data), nil
}

// interval is an interval's parts.
type interval struct {
	months, days int32
	micros       int64
}

// evalIntervalOp is $interval_add(a, b), $interval_sub(a, b) (part by
// part), $interval_mul(iv, f) and $timestamp_diff(t1, t2) (the difference's
// whole days as days, as timestamp_mi's interval_justify_hours).
func evalIntervalOp(c *call) (arrow.Array, error) {
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, 24*c.n)
	read := func(a arrow.Array, i int) (interval, error) {
		mo, d, us, err := ParseInterval(textOf(a).row(i))
		return interval{mo, d, us}, err
	}
	var buf []byte
	for i := range c.n {
		if validAt(valid, i) {
			var r interval
			var err error
			switch c.e.Func {
			case "$timestamp_diff":
				t1, t2 := c.args[0].(*array.Timestamp).Value(i), c.args[1].(*array.Timestamp).Value(i)
				us := int64(t1) - int64(t2)
				r = interval{days: int32(us / microsPerDay), micros: us % microsPerDay}
			case "$interval_mul":
				var a interval
				if a, err = read(c.args[0], i); err == nil {
					r = intervalMul(a, c.args[1].(*array.Float64).Value(i))
				}
			default:
				var a, b interval
				if a, err = read(c.args[0], i); err == nil {
					b, err = read(c.args[1], i)
				}
				if c.e.Func == "$interval_sub" {
					b = interval{-b.months, -b.days, -b.micros}
				}
				r = interval{a.months + b.months, a.days + b.days, a.micros + b.micros}
			}
			if err != nil {
				sb.release()
				releaseBuffer(valid)
				return nil, err
			}
			buf = types.AppendInterval(buf[:0], r.months, r.days, r.micros)
			sb.write(buf)
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// intervalMul is interval_mul: whole months and days multiplied, the
// fractions of a month spilling into days (30 a month) and of a day into
// time, each rounded to microseconds as PostgreSQL's TSROUND.
func intervalMul(a interval, f float64) interval {
	tsround := func(v float64) float64 { return math.RoundToEven(v*1e6) / 1e6 }
	r := interval{months: int32(float64(a.months) * f), days: int32(float64(a.days) * f)}
	monthRemDays := tsround((float64(a.months)*f - float64(r.months)) * 30)
	secRem := tsround((float64(a.days)*f - float64(r.days) + monthRemDays - math.Trunc(monthRemDays)) * 86400)
	if math.Abs(secRem) >= 86400 {
		r.days += int32(secRem / 86400)
		secRem -= math.Trunc(secRem/86400) * 86400
	}
	r.days += int32(monthRemDays)
	r.micros = int64(math.RoundToEven(float64(a.micros)*f + secRem*1e6))
	return r
}

// orderedKeyLen is the length of the key $interval_ordered puts before an
// interval's text: 16 hex digits.
const orderedKeyLen = 16

// evalIntervalOrdered is $interval_ordered(iv) and $interval_unordered(s),
// which let min and max of text find PostgreSQL's least and greatest
// interval: the first is iv's text after its interval_cmp_value key as 16
// hex digits, the sign bit flipped, so that text order is interval order;
// the second takes the key off again.
func evalIntervalOrdered(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, len(in.data)+orderedKeyLen*c.n)
	const digits = "0123456789abcdef"
	var buf []byte
	for i := range c.n {
		if validAt(valid, i) {
			s := in.row(i)
			if c.e.Func == "$interval_unordered" {
				sb.write(s[min(len(s), orderedKeyLen):])
				sb.end()
				continue
			}
			mo, d, us, err := ParseInterval(s)
			if err != nil {
				sb.release()
				releaseBuffer(valid)
				return nil, err
			}
			key := uint64((int64(mo)*30+int64(d))*microsPerDay+us) ^ 1<<63
			buf = buf[:0]
			for shift := 60; shift >= 0; shift -= 4 {
				buf = append(buf, digits[key>>shift&15])
			}
			sb.write(append(buf, s...))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

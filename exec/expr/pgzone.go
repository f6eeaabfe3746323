package expr

import (
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/types"
)

// The conversions of timestamp with time zone that depend on a time zone,
// which the binder gives as their last argument (the session's TimeZone, or
// AT TIME ZONE's zone), as PostgreSQL's timestamptz_in, timestamp_timestamptz,
// timestamptz_timestamp and timestamptz_out compute them:
//
//	$timestamptz_in(text, zone)   text without a zone read as wall time in zone
//	$tz_from_local(ts, zone)      the instant when the wall clock in zone shows ts
//	$tz_to_local(tstz, zone)      what the wall clock in zone shows at tstz
//	$tz_text(tstz, zone)          tstz's text in zone, with its offset

// zoneArg reads the zone argument of row i, looking a name up once while
// the rows name the same zone.
type zoneArg struct {
	in   textArg
	name string
	loc  *time.Location
}

func (z *zoneArg) at(i int) (*time.Location, error) {
	row := z.in.row(i)
	if z.loc != nil && string(row) == z.name {
		return z.loc, nil
	}
	loc, err := types.Zone(string(row))
	if err != nil {
		return nil, newError(ErrInvalidArgument, "time zone \"%s\" not recognized", string(row))
	}
	z.name, z.loc = string(row), loc
	return loc, nil
}

// evalZoned is the four functions above.
func evalZoned(c *call) (arrow.Array, error) {
	zone := &zoneArg{in: textOf(c.args[1])}
	valid, nulls := validity(c.mem, c.n, c.args...)
	if c.e.Func == "$tz_text" {
		stamps := int64Values(c.args[0])
		sb := newStringBuilder(c.mem, c.n, 25*c.n)
		var buf []byte
		for i := range c.n {
			if validAt(valid, i) {
				loc, err := zone.at(i)
				if err != nil {
					sb.release()
					releaseBuffer(valid)
					return nil, err
				}
				buf = types.AppendTimestamptzIn(buf[:0], stamps[i], loc)
				sb.write(buf)
			}
			sb.end()
		}
		sb.valid, sb.nulls = valid, nulls
		return sb.array(), nil
	}
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		loc, err := zone.at(i)
		if err == nil {
			out[i], err = zoned(c.e.Func, c.args[0], i, loc)
		}
		if err != nil {
			releaseBuffer(data)
			releaseBuffer(valid)
			return nil, err
		}
	}
	return finish(types.TimestampType.Arrow(), c.n, nulls, valid, data), nil
}

// zoned computes row i of $timestamptz_in, $tz_from_local or $tz_to_local.
func zoned(fn string, a arrow.Array, i int, loc *time.Location) (int64, error) {
	switch fn {
	case "$timestamptz_in":
		return ParseTimestampTZIn(textOf(a).row(i), loc)
	case "$tz_from_local":
		local := int64Values(a)[i]
		if isInfinite(local) {
			return local, nil
		}
		return local - int64(types.LocalOffset(loc, local))*microsPerSecond, nil
	default: // $tz_to_local
		at := int64Values(a)[i]
		if isInfinite(at) {
			return at, nil
		}
		return at + int64(types.ZoneOffset(loc, at))*microsPerSecond, nil
	}
}

// isInfinite reports whether a timestamp is infinity or -infinity, which no
// zone moves.
func isInfinite(micros int64) bool { return micros == math.MaxInt64 || micros == math.MinInt64 }

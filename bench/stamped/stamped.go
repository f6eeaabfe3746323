// Package stamped is the line format of the Kafka benchmarks: each line
// carries its send time and a sequence number, so that a reader measures its
// latency and counts lines lost or delivered twice.
package stamped

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// Clock reads time as Unix nanoseconds, but from the monotonic clock: producer
// and consumers share one clock in one process, so a latency is a difference of
// two of its readings, immune to steps of the wall clock.
type Clock struct{ base time.Time }

// NewClock starts a clock.
func NewClock() Clock { return Clock{base: time.Now()} }

// Now returns the time in Unix nanoseconds.
func (c Clock) Now() int64 { return c.base.UnixNano() + int64(time.Since(c.base)) }

// AppendLine appends a line: its send time and its sequence number.
func AppendLine(dst []byte, ts, seq int64) []byte {
	dst = append(dst, "ts="...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, " seq="...)
	return strconv.AppendInt(dst, seq, 10)
}

// ParseLine reads a line AppendLine wrote.
func ParseLine(b []byte) (ts, seq int64, err error) {
	rest, ok := bytes.CutPrefix(b, []byte("ts="))
	if !ok {
		return 0, 0, fmt.Errorf("line %q: no ts=", b)
	}
	t, s, ok := bytes.Cut(rest, []byte(" seq="))
	if !ok {
		return 0, 0, fmt.Errorf("line %q: no seq=", b)
	}
	if ts, err = strconv.ParseInt(string(t), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("line %q: %w", b, err)
	}
	if seq, err = strconv.ParseInt(string(s), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("line %q: %w", b, err)
	}
	return ts, seq, nil
}

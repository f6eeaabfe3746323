package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
)

// statementTimeout returns the session's statement_timeout (0: none).
func (s *Session) statementTimeout() time.Duration {
	d, _ := parseTimeout(s.vars["statement_timeout"]) // checked by SET
	return d
}

// timeoutUnits are PostgreSQL's units of time settings.
var timeoutUnits = map[string]time.Duration{
	"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
	"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour,
}

// parseTimeout reads a statement_timeout as PostgreSQL does: milliseconds
// ('5000'), or a number with a unit ('5s', '1.5min', '2 h'); Go durations
// ('1m30s') are accepted too. 0 means no timeout.
func parseTimeout(text string) (time.Duration, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return 0, nil
	}
	num := strings.TrimRight(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ")
	unit := strings.ToLower(strings.TrimSpace(t[len(num):]))
	if n, err := strconv.ParseFloat(num, 64); err == nil {
		scale := time.Millisecond
		if unit != "" {
			var ok bool
			if scale, ok = timeoutUnits[unit]; !ok {
				return 0, fmt.Errorf("valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\"")
			}
		}
		if n < 0 || n*float64(scale) > float64(1<<62) {
			return 0, fmt.Errorf("out of range")
		}
		return time.Duration(n * float64(scale)), nil
	}
	if d, err := time.ParseDuration(t); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("want milliseconds or a time such as '500ms', '5s' or '1min'")
}

// deadlineRows ends a statement's result at the statement's deadline: Next
// then fails with context.DeadlineExceeded (which the client sees as 57014,
// "canceling statement due to statement timeout") and the caller's Close
// stops the job.
type deadlineRows struct {
	Rows
	deadline time.Time
}

var _ ChangeRows = (*deadlineRows)(nil)

func (r *deadlineRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	ctx, cancel := context.WithDeadline(ctx, r.deadline)
	defer cancel()
	return r.Rows.Next(ctx)
}

// NextChanges passes change kinds through, for rows that have them.
func (r *deadlineRows) NextChanges(ctx context.Context) (exec.Batch, error) {
	cr, ok := r.Rows.(ChangeRows)
	if !ok {
		rec, err := r.Next(ctx)
		return exec.Batch{Rec: rec}, err
	}
	ctx, cancel := context.WithDeadline(ctx, r.deadline)
	defer cancel()
	return cr.NextChanges(ctx)
}

// lateNotices are the wrapped rows' (LateNotices).
func (r *deadlineRows) lateNotices() []string { return LateNotices(r.Rows) }

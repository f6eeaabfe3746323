package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/session"
)

// TestCancelledBeforePlanning: a statement whose context is done by the time
// it is bound (a cancel request, or statement_timeout) stops before any job
// starts, and the session goes on.
func TestCancelledBeforePlanning(t *testing.T) {
	e := openAuthEngine(t)
	s := e.NewSession()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	started := false
	err := s.Exec(ctx, "SELECT 1 + 1", func(r *session.Result) error {
		started = true
		return nil
	})
	if !errors.Is(err, context.Canceled) || started {
		t.Fatalf("a cancelled SELECT: result %v, error %v; want context.Canceled and no result", started, err)
	}
	if out, err := run(s, "SHOW PROCESSLIST"); err != nil || strings.Contains(out, "SELECT 1 + 1") {
		t.Errorf("SHOW PROCESSLIST after it: %q, %v; want no job of it", out, err)
	}
	if out, err := run(s, "SELECT 1 + 1"); err != nil || out != "2" {
		t.Errorf("SELECT 1 + 1 after it: %q, %v", out, err)
	}
}

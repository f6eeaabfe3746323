package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// What PostgreSQL 15 answers, where it depends on the session's start (the
// expected values were read off a server started with the same options;
// settings.slt covers what does not).

func TestStartupSettings(t *testing.T) {
	e := openAuthEngine(t)
	mustRun(t, e.NewSession(), "CREATE USER alice")
	s, err := e.StartSession(session.Startup{User: "alice", Database: "db", PID: 42, Settings: []session.Param{
		{Name: "TimeZone", Value: "europe/paris"}, {Name: "datestyle", Value: "iso, dmy"},
		{Name: "search_path", Value: "a, public"}, {Name: "application_name", Value: "app"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The first ParameterStatus tells everything, the settings applied.
	first := fmt.Sprint(s.ParameterStatus())
	want := "[{application_name app} {client_encoding UTF8} {DateStyle ISO, DMY} {default_transaction_read_only off} " +
		"{in_hot_standby off} {integer_datetimes on} {IntervalStyle postgres} {is_superuser off} {server_encoding UTF8} " +
		"{server_version 15.0 (Hummer)} {session_authorization alice} {standard_conforming_strings on} {TimeZone Europe/Paris}]"
	if first != want {
		t.Errorf("ParameterStatus at startup:\n got %s\nwant %s", first, want)
	}
	if got := s.ParameterStatus(); len(got) != 0 {
		t.Errorf("nothing changed, yet %v", got)
	}
	for _, c := range []struct{ query, out, told string }{
		{"SELECT current_user, session_user, current_database(), pg_backend_pid()", "'alice'|'alice'|'db'|42", "[]"},
		// A value set from a raw text is kept as it is (PostgreSQL's set_config and startup packet).
		{"SHOW search_path", "'a, public'", "[]"},
		{"SELECT current_schemas(false)", "'{public}'", "[]"},
		{"SET TimeZone = 'UTC'", "SET", "[{TimeZone UTC}]"},
		{"SET TimeZone = 'UTC'", "SET", "[]"},
		{"RESET TimeZone", "RESET", "[{TimeZone Europe/Paris}]"},
		{"SELECT set_config('timezone', 'Asia/Tokyo', false)", "'Asia/Tokyo'", "[{TimeZone Asia/Tokyo}]"},
		{"SELECT set_config('timezone', NULL, false)", "'Europe/Paris'", "[{TimeZone Europe/Paris}]"},
		{"SELECT set_config('timezone', 'UTC', true)", "'UTC'", "[]"}, // local to the statement's transaction
		{"SET application_name = 'x'; SET application_name = 'app'", "SET\nSET", "[]"},
		{"SET LOCAL application_name = 'x'; SHOW application_name", "SET\n'x'", "[]"},
		{"SET DateStyle = 'ISO'", "SET", "[]"}, // the order stays DMY
		{"SHOW DateStyle", "'ISO, DMY'", "[]"},
		{"RESET ALL", "RESET", "[]"},
		{"SET extra_float_digits = 3; DISCARD ALL", "SET\nDISCARD ALL", "[]"},
		{"SHOW extra_float_digits", "'1'", "[]"},
	} {
		out, err := run(s, c.query)
		if err != nil || out != c.out {
			t.Errorf("%s: %q %v, want %q", c.query, out, err, c.out)
		}
		if told := fmt.Sprint(s.ParameterStatus()); told != c.told {
			t.Errorf("%s: told %s, want %s", c.query, told, c.told)
		}
	}
}

func TestStartupSettingErrors(t *testing.T) {
	e := openAuthEngine(t)
	for _, c := range []struct {
		name, value string
		kind        error
		msg         string
	}{
		{"TimeZone", "Mars", sql.ErrInvalidValue, `invalid value for parameter "TimeZone": "Mars"`},
		{"nope", "1", sql.ErrUnknownVariable, `unrecognized configuration parameter "nope"`},
		{"server_version", "1", sql.ErrCantChange, `parameter "server_version" cannot be changed`},
		{"DateStyle", "German", sql.ErrInvalidValue, `invalid value for parameter "DateStyle": "German"`},
		{"client_encoding", "LATIN1", sql.ErrInvalidValue, `invalid value for parameter "client_encoding": "LATIN1"`},
	} {
		_, err := e.StartSession(session.Startup{User: "u", Settings: []session.Param{{Name: c.name, Value: c.value}}})
		if !errors.Is(err, c.kind) || err.Error() != c.msg {
			t.Errorf("%s=%s: %v, want %q", c.name, c.value, err, c.msg)
		}
	}
}

// TestSetLocalOutsideBlock: alone, SET LOCAL warns (25P01) and changes
// nothing, as PostgreSQL's outside a transaction block.
func TestSetLocalOutsideBlock(t *testing.T) {
	e := openAuthEngine(t)
	s := e.NewSession()
	var warnings []session.Warning
	err := s.Exec(context.Background(), "SET LOCAL timezone = 'Europe/Paris'", func(r *session.Result) error {
		warnings = r.Warnings
		return nil
	})
	if err != nil || len(warnings) != 1 || !errors.Is(warnings[0].Kind, sql.ErrNoTransaction) ||
		warnings[0].Message != "SET LOCAL can only be used in transaction blocks" {
		t.Errorf("SET LOCAL: %v %v", warnings, err)
	}
	if out := mustRun(t, s, "SHOW timezone"); out != "'UTC'" {
		t.Errorf("after SET LOCAL: %s", out)
	}
}

// TestDeallocateResults: what the wire server is told to drop.
func TestDeallocateResults(t *testing.T) {
	e := openAuthEngine(t)
	s := e.NewSession()
	for query, want := range map[string]string{
		"DEALLOCATE s1":            "DEALLOCATE s1 false",
		"DEALLOCATE PREPARE \"S\"": "DEALLOCATE S false",
		"DEALLOCATE ALL":           "DEALLOCATE ALL  true",
		"DISCARD ALL":              "DISCARD ALL  true",
		"DISCARD TEMPORARY":        "DISCARD TEMP  false",
	} {
		var got string
		err := s.Exec(context.Background(), query, func(r *session.Result) error {
			got = fmt.Sprintf("%s %s %v", r.Tag, r.DropPrepared, r.DropAllPrepared)
			return nil
		})
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", query, got, err, want)
		}
	}
}

// TestSessionFunctionsInViews: a view's query is bound again at restart
// without a session, so it may not read one.
func TestSessionFunctionsInViews(t *testing.T) {
	e := openAuthEngine(t)
	s := e.NewSession()
	_, err := run(s, "CREATE VIEW v AS SELECT current_user AS u")
	if !errors.Is(err, sql.ErrUnsupported) || !strings.Contains(err.Error(), "cannot be used in a view") {
		t.Errorf("CREATE VIEW over current_user: %v", err)
	}
}

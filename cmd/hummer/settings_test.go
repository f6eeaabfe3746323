package main

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The expectations below are PostgreSQL 15's, read off a real server with
// the same clients: the startup packet's options set the session and show
// in its ParameterStatus, a SET of a reported parameter is reported before
// ReadyForQuery (only if its value changed), RESET returns to the startup
// value, SET LOCAL lasts to the end of a query of several statements, and
// DEALLOCATE drops a statement prepared through the protocol.

// TestSettingsPgx drives the session's parameters with pgconn, the layer of
// pgx that shows ParameterStatus.
func TestSettingsPgx(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(options string) (*pgconn.PgConn, error) {
		cfg, err := pgconn.ParseConfig("postgres://hummer@" + addr + "/hummer?sslmode=disable&application_name=e2e")
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["options"] = options
		return pgconn.ConnectConfig(ctx, cfg)
	}
	conn, err := connect(`-c TimeZone=Asia/Tokyo --DateStyle=ISO,\ DMY`)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	status := func(want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got := conn.ParameterStatus(k); got != v {
				t.Errorf("ParameterStatus(%s) = %q, want %q", k, got, v)
			}
		}
	}
	status(map[string]string{"TimeZone": "Asia/Tokyo", "DateStyle": "ISO, DMY", "application_name": "e2e",
		"server_version": "15.0 (Hummer)", "session_authorization": "hummer", "is_superuser": "on",
		"default_transaction_read_only": "off", "in_hot_standby": "off", "IntervalStyle": "postgres"})

	// rows runs a simple query of one or more statements, returning the
	// rows of all, as text, or the first error.
	rows := func(sql string) ([]string, error) {
		res, err := conn.Exec(ctx, sql).ReadAll()
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range res {
			for _, row := range r.Rows {
				var cells []string
				for _, c := range row {
					cells = append(cells, string(c))
				}
				out = append(out, strings.Join(cells, "|"))
			}
		}
		return out, nil
	}
	one := func(sql string) string {
		t.Helper()
		got, err := rows(sql)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %v", sql, got, err)
		}
		return got[0]
	}
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return ""
	}

	if got := one("SHOW timezone"); got != "Asia/Tokyo" {
		t.Errorf("SHOW timezone = %q", got)
	}
	one("SELECT 1") // the session is idle: nothing more to report
	if _, err := rows("SET TimeZone = 'europe/paris'"); err != nil {
		t.Fatal(err)
	}
	status(map[string]string{"TimeZone": "Europe/Paris"})
	if _, err := rows("SET TimeZone = 'UTC'; RESET timezone"); err != nil {
		t.Fatal(err)
	}
	status(map[string]string{"TimeZone": "Asia/Tokyo"}) // RESET: the startup value
	if _, err := rows("SET application_name = 'other'"); err != nil {
		t.Fatal(err)
	}
	status(map[string]string{"application_name": "other"})
	if _, err := rows("RESET ALL"); err != nil {
		t.Fatal(err)
	}
	status(map[string]string{"application_name": "e2e", "DateStyle": "ISO, DMY"})

	// SET LOCAL in a query of several statements: in force to its end.
	got, err := rows("SET LOCAL timezone = 'UTC'; SELECT current_setting('timezone')")
	if err != nil || strings.Join(got, ",") != "UTC" {
		t.Errorf("SET LOCAL in a block: %v %v", got, err)
	}
	if got := one("SHOW timezone"); got != "Asia/Tokyo" {
		t.Errorf("after the block, SHOW timezone = %q", got)
	}
	status(map[string]string{"TimeZone": "Asia/Tokyo"})

	// The session functions.
	if got := one("SELECT version()"); !strings.HasPrefix(got, "PostgreSQL 15.0 (Hummer) on ") {
		t.Errorf("version() = %q", got)
	}
	_, port, _ := net.SplitHostPort(addr)
	want := "hummer|hummer|hummer|hummer|" + strconv.Itoa(int(conn.PID())) + "|" + port
	if got := one("SELECT current_user, session_user, current_database(), current_catalog, pg_backend_pid(), inet_server_port()"); got != want {
		t.Errorf("session functions: %q, want %q", got, want)
	}

	// DEALLOCATE drops statements prepared through the protocol.
	if _, err := conn.Prepare(ctx, "s1", "SELECT 1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rows("DEALLOCATE s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecPrepared(ctx, "s1", nil, nil, nil).Close(); code(err) != "26000" {
		t.Errorf("s1 after DEALLOCATE: %v, want 26000", err)
	}
	if _, err := rows("DEALLOCATE s1"); code(err) != "26000" {
		t.Errorf("DEALLOCATE s1 twice: %v, want 26000", err)
	}
	if _, err := conn.Prepare(ctx, "s2", "SELECT 2", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rows("DISCARD ALL"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prepare(ctx, "s2", "SELECT 2", nil); err != nil {
		t.Errorf("s2 again after DISCARD ALL: %v", err) // 42P05 had it survived
	}

	// A bad startup setting fails the connection with a FATAL.
	for options, want := range map[string]string{"-c TimeZone=Mars": "22023", "-c nope=1": "42704", "-x": "42601"} {
		c, err := connect(options)
		var pe *pgconn.PgError
		if err == nil {
			c.Close(ctx)
		}
		if !errors.As(err, &pe) || pe.Code != want || pe.Severity != "FATAL" {
			t.Errorf("options %q: %v, want a FATAL %s", options, err, want)
		}
	}
}

// TestSettingsPsql: psql's PGOPTIONS reach the session, and one it cannot
// take fails the connection as PostgreSQL does.
func TestSettingsPsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed")
	}
	addr := startTestServer(t)
	out, err := psqlAs(addr, "hummer", []string{"PGOPTIONS=-c TimeZone=Europe/Paris -c search_path=public"},
		"SHOW timezone;\nSET timezone = 'UTC';\nRESET timezone;\nSHOW TimeZone;\nSELECT current_schemas(true);\nSET timezone = 'Mars/Olympus';\n")
	want := "Europe/Paris\nEurope/Paris\n{pg_catalog,public}\n" +
		"psql:<stdin>:7: ERROR:  22023: invalid value for parameter \"TimeZone\": \"Mars/Olympus\"\n"
	if err != nil || !strings.HasPrefix(out, want) {
		t.Errorf("psql with PGOPTIONS: %v\n%s\nwant\n%s", err, out, want)
	}
	out, err = psqlAs(addr, "hummer", []string{"PGOPTIONS=-c nope=1"}, "SELECT 1;\n")
	if err == nil || !strings.Contains(out, `FATAL:  unrecognized configuration parameter "nope"`) {
		t.Errorf("psql with a bad PGOPTIONS: %v\n%s", err, out)
	}
}

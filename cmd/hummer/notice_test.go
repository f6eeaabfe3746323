package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestClientMinMessages: client_min_messages, from the startup packet's
// options (as PGOPTIONS='-c client_min_messages=warning' sends it) or from
// SET, decides which notices a client is sent, as in PostgreSQL 15: DROP
// TABLE IF EXISTS of a missing table sends a NOTICE at the default (notice)
// and none at warning or error; a bad level is 22023.
func TestClientMinMessages(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(options string) (*pgx.Conn, *[]*pgconn.Notice) {
		cfg, err := pgx.ParseConfig("postgres://hummer@" + addr + "/hummer?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		if options != "" {
			cfg.RuntimeParams["options"] = options
		}
		notices := new([]*pgconn.Notice)
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { *notices = append(*notices, n) }
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("connect with options %q: %v", options, err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn, notices
	}
	drop := func(conn *pgx.Conn) {
		t.Helper()
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS no_such_table"); err != nil {
			t.Fatal(err)
		}
	}
	show := func(conn *pgx.Conn) string {
		t.Helper()
		var v string
		if err := conn.QueryRow(ctx, "SHOW client_min_messages").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	plain, notices := connect("")
	drop(plain)
	if len(*notices) != 1 || (*notices)[0].Severity != "NOTICE" {
		t.Errorf("at the default level: %+v, want one NOTICE", *notices)
	}
	if v := show(plain); v != "notice" {
		t.Errorf("default: %q, want notice", v)
	}
	if _, err := plain.Exec(ctx, "SET client_min_messages = ERROR"); err != nil {
		t.Fatal(err)
	}
	drop(plain)
	if len(*notices) != 1 {
		t.Errorf("after SET client_min_messages = ERROR: %d notices, want still 1", len(*notices))
	}
	var pe *pgconn.PgError
	if _, err := plain.Exec(ctx, "SET client_min_messages = loud"); !errors.As(err, &pe) || pe.Code != "22023" {
		t.Errorf("SET client_min_messages = loud: %v, want 22023", err)
	}

	quiet, quietNotices := connect("-c client_min_messages=warning")
	drop(quiet)
	if len(*quietNotices) != 0 {
		t.Errorf("with client_min_messages=warning at startup: %+v, want none", *quietNotices)
	}
	if v := show(quiet); v != "warning" {
		t.Errorf("from the startup options: %q, want warning", v)
	}
}

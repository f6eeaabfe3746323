package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// allModes are pgx's ways to run a query: the simple protocol (text), and
// the extended one, where pgx asks for binary results of the types it knows
// and sends parameters in binary.
var allModes = []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement}

// scanTyped runs query in mode, checks the type OID of its one column and
// scans its one row into dst.
func scanTyped(t *testing.T, ctx context.Context, conn *pgx.Conn, mode pgx.QueryExecMode, query string, oid uint32, dst any) {
	t.Helper()
	rows, err := conn.Query(ctx, query, mode)
	if err != nil {
		t.Fatalf("%v %s: %v", mode, query, err)
	}
	defer rows.Close()
	if got := rows.FieldDescriptions()[0].DataTypeOID; got != oid {
		t.Errorf("%v %s: the column's type OID is %d, want %d", mode, query, got, oid)
	}
	n := 0
	for rows.Next() {
		n++
		if err := rows.Scan(dst); err != nil {
			t.Fatalf("%v %s: %v", mode, query, err)
		}
	}
	if err := rows.Err(); err != nil || n != 1 {
		t.Fatalf("%v %s: %d rows, %v", mode, query, n, err)
	}
}

// TestPgTypesOnTheWire: PostgreSQL's types Hummer holds as one of its own
// (exec/types/pgtypes.go) on the wire, read and sent by pgx in text and in
// binary.
func TestPgTypesOnTheWire(t *testing.T) {
	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE pgt (id BIGINT)"); err != nil {
		t.Fatal(err)
	}

	// Columns are described as PostgreSQL 15 describes them (psql's \gdesc
	// there: relname name, relkind "char", regclass, timestamp with time zone).
	t.Run("oids", func(t *testing.T) {
		for _, c := range []struct {
			query string
			oids  []uint32
		}{
			{"SELECT relname, relkind FROM pg_class WHERE relname = 'pgt'", []uint32{19, 18}},
			{"SELECT attname FROM pg_attribute WHERE attrelid = 'pgt'::regclass", []uint32{19}},
			{"SELECT typname, typtype FROM pg_type WHERE oid = 20", []uint32{19, 18}},
			{"SELECT 'pgt'::regclass, 'pgt'::regclass::text, relname::text FROM pg_class WHERE relname = 'pgt'", []uint32{2205, 25, 25}},
			{"SELECT now(), '2024-01-02 03:04:05+02'::timestamptz, '2024-01-02 03:04:05+02'::timestamptz::timestamp", []uint32{1184, 1184, 1114}},
		} {
			for _, mode := range allModes[:2] {
				rows, err := conn.Query(ctx, c.query, mode)
				if err != nil {
					t.Fatalf("%s: %v", c.query, err)
				}
				fds := rows.FieldDescriptions()
				rows.Close()
				for i, fd := range fds {
					if fd.DataTypeOID != c.oids[i] {
						t.Errorf("%v %s: column %s has type OID %d, want %d", mode, c.query, fd.Name, fd.DataTypeOID, c.oids[i])
					}
				}
			}
		}
	})

	// Casts' columns are named as PostgreSQL 15 names them (psql's headers
	// there for the same query).
	t.Run("names", func(t *testing.T) {
		rows, err := conn.Query(ctx, `SELECT 'pgt'::regclass, 'pgt'::regclass::text, c.oid::regclass, c.relname::text, 'on'::bool,
			c.relhasindex::bool, '1 h'::interval::text, now()::timestamptz, '\x01'::bytea, 1::text, ARRAY[1, 2] FROM pg_class c WHERE c.oid = 'pgt'::regclass`)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		var names []string
		for _, fd := range rows.FieldDescriptions() {
			names = append(names, fd.Name)
		}
		if got, want := strings.Join(names, " "), "regclass text oid relname bool relhasindex text now bytea text array"; got != want {
			t.Errorf("column names %q, want %q", got, want)
		}
		rows, err = conn.Query(ctx, "SELECT array_agg(relname ORDER BY relname), (array_agg(relname)) FROM pg_class")
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if fds := rows.FieldDescriptions(); fds[0].Name != "array_agg" || fds[1].Name != "array_agg" {
			t.Errorf("array_agg's columns are named %q and %q, want array_agg", fds[0].Name, fds[1].Name)
		}
		// A window function's column is named by the function, as
		// PostgreSQL 15 names them (sum, row_number, rank).
		rows, err = conn.Query(ctx, "SELECT sum(relnatts) OVER (), row_number() OVER (ORDER BY relname), rank() OVER (ORDER BY relname) FROM pg_class")
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, fd := range rows.FieldDescriptions() {
			names = append(names, fd.Name)
		}
		if got, want := strings.Join(names, " "), "sum row_number rank"; got != want {
			t.Errorf("window functions' column names %q, want %q", got, want)
		}
	})

	// timestamptz values are instants; a time.Time parameter is sent as
	// timestamptz, binary in the extended protocol and text in the simple one.
	t.Run("timestamptz", func(t *testing.T) {
		want := time.Date(2024, 1, 2, 1, 4, 5, 123456000, time.UTC)
		for _, mode := range allModes {
			var got time.Time
			if scanTyped(t, ctx, conn, mode, "SELECT '2024-01-02 03:04:05.123456+02'::timestamptz", 1184, &got); !got.Equal(want) {
				t.Errorf("%v: read %v, want %v", mode, got, want)
			}
			var text string
			if err := conn.QueryRow(ctx, "SELECT $1::timestamptz::text", mode, want.In(time.FixedZone("", -3*3600))).Scan(&text); err != nil || text != "2024-01-02 01:04:05.123456+00" {
				t.Errorf("%v: a timestamptz parameter reads back as %q, %v", mode, text, err)
			}
		}
		var got time.Time
		if err := conn.QueryRow(ctx, "SELECT $1::timestamptz", pgx.QueryExecModeExec, "2024-01-02 03:04:05.123456+02").Scan(&got); err != nil || !got.Equal(want) {
			t.Errorf("text timestamptz parameter: %v, %v; want %v", got, err, want)
		}
	})

	// bytea in text (hex) and binary; []byte parameters, which pgx sends as
	// binary bytea, and text ones.
	t.Run("bytea", func(t *testing.T) {
		want := []byte{0, 1, 0xff, '\\', 'x'}
		for _, mode := range allModes {
			var got []byte
			if scanTyped(t, ctx, conn, mode, `SELECT '\x0001ff5c78'::bytea`, 17, &got); string(got) != string(want) {
				t.Errorf("%v: read %x, want %x", mode, got, want)
			}
			var n int64
			var hex string
			if err := conn.QueryRow(ctx, "SELECT length($1::bytea), $1::bytea::text", mode, want).Scan(&n, &hex); err != nil || n != 5 || hex != `\x0001ff5c78` {
				t.Errorf("%v: a bytea parameter: length %d, text %q, %v", mode, n, hex, err)
			}
		}
		var got []byte
		if err := conn.QueryRow(ctx, "SELECT $1::bytea", pgx.QueryExecModeExec, `\x0001ff5c78`).Scan(&got); err != nil || string(got) != string(want) {
			t.Errorf("a text bytea parameter: %x, %v", got, err)
		}
	})

	// interval in text and binary; parameters pgx sends binary (a
	// time.Duration or pgtype.Interval), and text ones. The wanted text is
	// PostgreSQL's.
	t.Run("interval", func(t *testing.T) {
		want := pgtype.Interval{Months: 14, Days: -3, Microseconds: 3723500000, Valid: true}
		for _, mode := range allModes {
			var got pgtype.Interval
			if scanTyped(t, ctx, conn, mode, "SELECT '1 year 2 mons -3 days 01:02:03.5'::interval", 1186, &got); got != want {
				t.Errorf("%v: read %+v, want %+v", mode, got, want)
			}
			var text string
			if err := conn.QueryRow(ctx, "SELECT $1::interval::text", mode, want).Scan(&text); err != nil || text != "1 year 2 mons -3 days +01:02:03.5" {
				t.Errorf("%v: an interval parameter reads back as %q, %v", mode, text, err)
			}
			var ts time.Time
			if err := conn.QueryRow(ctx, "SELECT '2024-01-01 00:00:00'::timestamp + $1::interval", mode, 90*time.Minute).Scan(&ts); err != nil || !ts.Equal(time.Date(2024, 1, 1, 1, 30, 0, 0, time.UTC)) {
				t.Errorf("%v: timestamp + a duration parameter: %v, %v", mode, ts, err)
			}
		}
		var text string
		if err := conn.QueryRow(ctx, "SELECT $1::interval::text", pgx.QueryExecModeExec, "2 hours ago").Scan(&text); err != nil || text != "-02:00:00" {
			t.Errorf("a text interval parameter: %q, %v", text, err)
		}
	})
}

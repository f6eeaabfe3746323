package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDateOnTheWire: a DATE column is PostgreSQL's date (OID 1082) to a
// client, in text and in binary, and a date parameter binds as one.
func TestDateOnTheWire(t *testing.T) {
	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	want := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement} {
		rows, err := conn.Query(ctx, "SELECT DATE '2024-02-29' + 0 AS d", mode)
		if err != nil {
			t.Fatal(err)
		}
		if oid := rows.FieldDescriptions()[0].DataTypeOID; oid != 1082 {
			t.Errorf("%v: the column's type OID is %d, want 1082 (date)", mode, oid)
		}
		var got time.Time
		for rows.Next() {
			if err := rows.Scan(&got); err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
		if !got.Equal(want) {
			t.Errorf("%v: read %v, want %v", mode, got, want)
		}
	}
	var days int64
	if err := conn.QueryRow(ctx, "SELECT $1::date - DATE '2024-01-01'", want).Scan(&days); err != nil || days != 59 {
		t.Errorf("a date parameter: %d days, %v; want 59", days, err)
	}
}

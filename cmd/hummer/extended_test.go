package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// TestPgxExtendedProtocol drives the extended query protocol with pgx's default
// mode (prepared and cached statements, binary formats where pgx prefers them).
func TestPgxExtendedProtocol(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://hummer@"+addr+"/hummer?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	data := filepath.Join(t.TempDir(), "words.csv")
	if err := os.WriteFile(data, []byte("apple,1,0.5\nbanana,2,1.25\ncherry,3,2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE words (word TEXT, n BIGINT, price DECIMAL(10,2)) ENGINE=file CONNECTION='file://"+data+"?format=csv'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET parallelism = 1"); err != nil {
		t.Fatal(err)
	}

	collect := func(query string, args ...any) []string {
		t.Helper()
		rows, err := conn.Query(ctx, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var w string
			var n int64
			if err := rows.Scan(&w, &n); err != nil {
				t.Fatal(err)
			}
			got = append(got, w)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return got
	}
	if got := collect("SELECT word, n FROM words WHERE n > $1 ORDER BY n", 1); len(got) != 2 || got[0] != "banana" {
		t.Errorf("int parameter: %v", got)
	}
	if got := collect("SELECT word, n FROM words WHERE word = $1", "cherry"); len(got) != 1 || got[0] != "cherry" {
		t.Errorf("text parameter: %v", got)
	}

	var word string
	var n int64
	if err := conn.QueryRow(ctx, "SELECT word, n * $2 FROM words WHERE word = $1", "apple", int64(10)).Scan(&word, &n); err != nil || word != "apple" || n != 10 {
		t.Errorf("QueryRow: %q %d %v", word, n, err)
	}
	var price float64
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT CAST(price AS DOUBLE), price > $1 FROM words WHERE n = 2", "1.0").Scan(&price, &ok); err != nil || price != 1.25 || !ok {
		t.Errorf("double and bool columns: %v %v %v", price, ok, err)
	}

	var dec float64
	if err := conn.QueryRow(ctx, "SELECT price FROM words WHERE price < $1", 1.0).Scan(&dec); err != nil || dec != 0.5 {
		t.Errorf("numeric column and parameter: %v %v", dec, err)
	}

	// Errors: the connection stays usable after each.
	var pe *pgconn.PgError
	_, err = conn.Exec(ctx, "SELEC 1")
	if !errors.As(err, &pe) || pe.Code != "42601" {
		t.Errorf("syntax error: %v", err)
	}
	if got := collect("SELECT word, n FROM words WHERE n = $1", 3); len(got) != 1 {
		t.Errorf("after a syntax error: %v", got)
	}
	_, err = conn.Exec(ctx, "SELECT word FROM words WHERE n > $1", "abc")
	if !errors.As(err, &pe) || pe.Code != "22P02" {
		t.Errorf("bad parameter: %v", err)
	}

	// An explicitly prepared statement run repeatedly.
	if _, err := conn.Prepare(ctx, "by_n", "SELECT word, n FROM words WHERE n >= $1"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if got := collect("by_n", i); len(got) != 4-i {
			t.Errorf("by_n(%d): %v", i, got)
		}
	}
	var count int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM words").Scan(&count); err != nil || count != 3 {
		t.Errorf("count: %d %v", count, err)
	}
}

// TestExtendedProtocolMessages checks what pgx does not exercise: a row limit
// (PortalSuspended), Describe of a portal, Close, and skipping to Sync after an
// error.
func TestExtendedProtocolMessages(t *testing.T) {
	addr := startTestServer(t)
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "hummer"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	// receive returns the type names of the messages up to ReadyForQuery.
	receive := func() string {
		t.Helper()
		var names []string
		for {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			switch m := msg.(type) {
			case *pgproto3.ReadyForQuery:
				return strings.Join(names, " ")
			case *pgproto3.ErrorResponse:
				names = append(names, "Error:"+m.Code)
			case *pgproto3.CommandComplete:
				names = append(names, "Complete:"+string(m.CommandTag))
			case *pgproto3.ParameterStatus, *pgproto3.BackendKeyData, *pgproto3.AuthenticationOk:
			default:
				names = append(names, strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3."))
			}
		}
	}
	receive()

	fe.Send(&pgproto3.Parse{Name: "s", Query: "CREATE TEMPORARY TABLE tt (a INT)"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	if got := receive(); got != "Error:0A000" {
		t.Errorf("unsupported statement: %s", got)
	}

	fe.Send(&pgproto3.Parse{Name: "s", Query: "SELECT 1 + $1 AS a"})
	fe.Send(&pgproto3.Describe{ObjectType: 'S', Name: "s"})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", Parameters: [][]byte{[]byte("41")}})
	fe.Send(&pgproto3.Describe{ObjectType: 'P', Name: "p"})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 1})
	fe.Send(&pgproto3.Execute{Portal: "p"})
	fe.Send(&pgproto3.Close{ObjectType: 'P', Name: "p"})
	fe.Send(&pgproto3.Execute{Portal: "p"}) // closed: an error, then skip to Sync
	fe.Send(&pgproto3.Execute{Portal: "p"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	want := "ParseComplete ParameterDescription RowDescription BindComplete RowDescription DataRow PortalSuspended Complete:SELECT 0 CloseComplete Error:34000"
	if got := receive(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	fe.Send(&pgproto3.Parse{Name: "s", Query: "SELECT 1"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	if got := receive(); got != "Error:42P05" {
		t.Errorf("duplicate statement: %s", got)
	}
	fe.Send(&pgproto3.Close{ObjectType: 'S', Name: "s"})
	fe.Send(&pgproto3.Parse{Query: "SET parallelism = 1"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Describe{ObjectType: 'P'})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Parse{Query: ""})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	want = "CloseComplete ParseComplete BindComplete NoData Complete:SET ParseComplete BindComplete EmptyQueryResponse"
	if got := receive(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	// An error is sent at once, as PostgreSQL flushes every ERROR: the Flush
	// after it is skipped with the rest up to Sync, and pg-cursor waits for
	// the error before it sends Sync. Then Sync ends the skipping.
	fe.Send(&pgproto3.Parse{Query: "SELECT nope"})
	fe.Send(&pgproto3.Bind{DestinationPortal: "c"})
	fe.Send(&pgproto3.Describe{ObjectType: 'P', Name: "c"})
	fe.Send(&pgproto3.Flush{})
	fe.Flush()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if msg, err := fe.Receive(); err != nil {
		t.Errorf("no answer to a failed Parse and Flush: %v", err)
	} else if e, ok := msg.(*pgproto3.ErrorResponse); !ok || e.Code != "42703" {
		t.Errorf("a failed Parse and Flush: %#v, want ErrorResponse 42703", msg)
	}
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	if got := receive(); got != "" {
		t.Errorf("Sync after the error: %s, want ReadyForQuery alone", got)
	}
	fe.Send(&pgproto3.Terminate{})
	fe.Flush()
}

package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// connect opens a pgx connection in simple-protocol mode (the server has no
// extended protocol yet). sslmode=prefer makes pgx send an SSLRequest first.
func connect(t *testing.T, ts *testServer, extra string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := fmt.Sprintf("postgres://alice@%s/db1?sslmode=prefer&default_query_exec_mode=simple_protocol%s", ts.addr, extra)
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPgxStartup(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "&application_name=wiretest")
	pc := c.PgConn()
	for k, want := range map[string]string{
		"server_version":              DefaultServerVersion,
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"TimeZone":                    "UTC",
		"application_name":            "wiretest",
		"session_authorization":       "alice",
	} {
		if got := pc.ParameterStatus(k); got != want {
			t.Errorf("ParameterStatus(%s) = %q, want %q", k, got, want)
		}
	}
	if pc.PID() == 0 || len(pc.SecretKey()) != 4 {
		t.Errorf("BackendKeyData: pid %d, key %x", pc.PID(), pc.SecretKey())
	}
	ts.be.mu.Lock()
	users := strings.Join(ts.be.users, ",")
	ts.be.mu.Unlock()
	if users != "alice/db1" {
		t.Errorf("sessions opened for %q, want alice/db1", users)
	}
}

func TestPgxTypes(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "")
	ctx := testCtx(t)

	rows, err := c.Query(ctx, "SELECT types")
	if err != nil {
		t.Fatal(err)
	}
	type fd struct {
		name string
		oid  uint32
		size int16
		mod  int32
	}
	var got []fd
	for _, f := range rows.FieldDescriptions() {
		got = append(got, fd{f.Name, f.DataTypeOID, f.DataTypeSize, f.TypeModifier})
	}
	want := []fd{
		{"b", 16, 1, -1}, {"i", 20, 8, -1}, {"f", 701, 8, -1},
		{"d", 1700, -1, 10<<16 | 2 + 4}, {"s", 25, -1, -1}, {"ts", 1114, 8, -1}, {"n", 25, -1, -1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fields\n got %v\nwant %v", got, want)
	}

	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}
	var raw []string
	for _, v := range rows.RawValues() {
		raw = append(raw, string(v))
	}
	wantRaw := []string{"t", "-9223372036854775808", "1.5e-07", "-1.50", "héllo, 'wörld'", "2024-01-02 03:04:05.12", ""}
	if fmt.Sprintf("%q", raw) != fmt.Sprintf("%q", wantRaw) {
		t.Errorf("text values\n got %q\nwant %q", raw, wantRaw)
	}
	var (
		b  bool
		i  int64
		f  float64
		d  pgtype.Numeric
		s  string
		tm time.Time
		n  any
	)
	if err := rows.Scan(&b, &i, &f, &d, &s, &tm, &n); err != nil {
		t.Fatal(err)
	}
	dj, _ := d.MarshalJSON()
	if !b || i != -9223372036854775808 || f != 1.5e-07 || string(dj) != "-1.50" || s != "héllo, 'wörld'" ||
		!tm.Equal(time.Date(2024, 1, 2, 3, 4, 5, 120e6, time.UTC)) || n != nil {
		t.Errorf("scanned %v %v %v %s %q %v %v", b, i, f, dj, s, tm, n)
	}

	if !rows.Next() {
		t.Fatalf("no second row: %v", rows.Err())
	}
	for j, v := range rows.RawValues() {
		if v != nil {
			t.Errorf("column %d of the NULL row is %q", j, v)
		}
	}
	if rows.Next() {
		t.Error("a third row")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if tag := rows.CommandTag().String(); tag != "SELECT 2" {
		t.Errorf("tag %q, want SELECT 2", tag)
	}
}

func TestPgxErrors(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "")
	ctx := testCtx(t)
	for _, tc := range []struct {
		query, code, msg string
		pos              int32
	}{
		{"bogus statement", "42601", `syntax error at or near "bogus"`, 1},
		{"SELECT 1; CREATE TABLE t;  nonsense", "42601", `syntax error at or near "nonsense"`, 28},
		{"err table", "42P01", `table "nope" does not exist`, 5},
		{"err stater", "22012", "evaluating: division by zero", 0},
		{"err nofile", "58P01", "file source: bad input: file does not exist", 0},
		{"err internal", "XX000", "internal error", 0},
		{"midstream", "22012", "division by zero", 0},
	} {
		_, err := c.Exec(ctx, tc.query)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want a PgError", tc.query, err)
			continue
		}
		if pe.Severity != "ERROR" || pe.Code != tc.code || pe.Message != tc.msg || pe.Position != tc.pos {
			t.Errorf("%q: got %s %s %q at %d, want ERROR %s %q at %d",
				tc.query, pe.Severity, pe.Code, pe.Message, pe.Position, tc.code, tc.msg, tc.pos)
		}
		// The session goes on.
		var one int64
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("after %q: SELECT 1 gave %d, %v", tc.query, one, err)
		}
	}
	// Only the one XX000 counts as a bug.
	if n := ts.InternalErrors(); n != 1 {
		t.Errorf("InternalErrors() = %d after one internal error, want 1", n)
	}
}

func TestPgxMidstreamErrorAfterRows(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "")
	rows, _ := c.Query(testCtx(t), "midstream")
	n := 0
	for rows.Next() {
		n++
	}
	var pe *pgconn.PgError
	if !errors.As(rows.Err(), &pe) || pe.Code != "22012" || n != 5 {
		t.Errorf("got %d rows then %v; want 5 rows then 22012", n, rows.Err())
	}
}

func TestPgxMultiStatementAndNotices(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	cfg, err := pgconn.ParseConfig(fmt.Sprintf("postgres://bob@%s/db?sslmode=disable", ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		notices = append(notices, n.Severity+" "+n.Code+" "+n.Message)
	}
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(context.Background())

	results, err := pc.Exec(ctx, "CREATE TABLE t; SELECT 1;notice; SHOW x; gen 3").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		var vals []string
		for _, row := range r.Rows {
			for _, v := range row {
				vals = append(vals, string(v))
			}
		}
		got = append(got, fmt.Sprintf("%s%v", r.CommandTag, vals))
	}
	want := "[CREATE TABLE[] SELECT 1[1] SET[] SHOW[on] SELECT 3[0 1 2]]"
	if fmt.Sprint(got) != want {
		t.Errorf("results\n got %v\nwant %s", got, want)
	}
	if fmt.Sprint(notices) != "[NOTICE 00000 first notice NOTICE 00000 second notice]" {
		t.Errorf("notices %q", notices)
	}

	// Empty queries get EmptyQueryResponse: no result, no error.
	for _, q := range []string{"", "   \n", ";", " ; ;"} {
		results, err := pc.Exec(ctx, q).ReadAll()
		if err != nil || len(results) != 1 || results[0].CommandTag.String() != "" || results[0].Err != nil {
			t.Errorf("Exec(%q) = %v, %v", q, results, err)
		}
	}
}

func TestPgxLargeResult(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "")
	const n = 200_000
	rows, err := c.Query(testCtx(t), fmt.Sprintf("gen %d", n))
	if err != nil {
		t.Fatal(err)
	}
	var count, sum int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != count {
			t.Fatalf("row %d is %d", count, v)
		}
		count++
		sum += v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if count != n || rows.CommandTag().String() != fmt.Sprintf("SELECT %d", n) {
		t.Errorf("%d rows, tag %q", count, rows.CommandTag())
	}
}

// TestPgxLargeResultsShareBuffers has connections run large results (each past
// flushThreshold several times over) and small statements between them, all at
// once: an idle connection gives its large output buffer to the others
// (outBufs), and every row must still come whole and in order. (The fake
// session takes the simple protocol only; cmd/hummer's tests run large results
// through the extended one.)
func TestPgxLargeResultsShareBuffers(t *testing.T) {
	ts := startServer(t)
	const conns, rounds, n = 4, 6, 60_000
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for k := range conns {
		c := connect(t, ts, "")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := testCtx(t)
			for r := range rounds {
				rows, err := c.Query(ctx, fmt.Sprintf("gen %d", n+k), pgx.QueryExecModeSimpleProtocol)
				if err != nil {
					errs <- err
					return
				}
				var count int64
				for rows.Next() {
					var v int64
					if err := rows.Scan(&v); err != nil || v != count {
						rows.Close()
						errs <- fmt.Errorf("conn %d round %d: row %d is %d (%v)", k, r, count, v, err)
						return
					}
					count++
				}
				if err := rows.Err(); err != nil || count != n+int64(k) {
					errs <- fmt.Errorf("conn %d round %d: %d rows, %v", k, r, count, err)
					return
				}
				if _, err := c.Exec(ctx, "gen 1", pgx.QueryExecModeSimpleProtocol); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPgxConcurrentConnections(t *testing.T) {
	ts := startServer(t)
	const conns, queries = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://u%d@%s/db?sslmode=disable&default_query_exec_mode=simple_protocol", k, ts.addr))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(context.Background())
			for q := range queries {
				var sum, cnt int64
				if err := c.QueryRow(ctx, fmt.Sprintf("gen %d", 1000+q)).Scan(&sum); err != nil {
					errs <- fmt.Errorf("conn %d query %d: %w", k, q, err)
					return
				}
				rows, _ := c.Query(ctx, fmt.Sprintf("gen %d", 1000+q))
				for rows.Next() {
					cnt++
				}
				if rows.Err() != nil || cnt != int64(1000+q) {
					errs <- fmt.Errorf("conn %d: %d rows, %v", k, cnt, rows.Err())
					return
				}
				var pe *pgconn.PgError
				if _, err := c.Exec(ctx, "err table"); !errors.As(err, &pe) || pe.Code != "42P01" {
					errs <- fmt.Errorf("conn %d: err table gave %v", k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPgxCancelRequest(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "")
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "block")
		done <- err
	}()
	waitFor(t, ts.be.blockStart, "the statement to start")
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	err := waitFor(t, done, "the cancelled statement")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to user request" {
		t.Errorf("cancelled statement: %v", err)
	}
	waitFor(t, ts.be.rowsClosed, "rows to close")
	var one int64
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Errorf("after cancel: %v", err)
	}
}

func TestPgxExtendedProtocolRefused(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "")
	ctx := testCtx(t)
	var one int64
	err := c.QueryRow(ctx, "SELECT 1", pgx.QueryExecModeCacheStatement).Scan(&one)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "0A000" {
		t.Fatalf("extended protocol query: %v", err)
	}
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("simple query after the refusal: %d, %v", one, err)
	}
}

func TestPgxProtocol32Negotiated(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "&max_protocol_version=3.2")
	var one int64
	if err := c.QueryRow(testCtx(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 = %d, %v", one, err)
	}
}

func TestPanicEndsOnlyThatConnection(t *testing.T) {
	ts := startServer(t)
	c1 := connect(t, ts, "")
	c2 := connect(t, ts, "")
	ctx := testCtx(t)
	_, err := c1.Exec(ctx, "panic")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Severity != "FATAL" || pe.Code != "XX000" || strings.Contains(pe.Message, "boom") {
		t.Errorf("panic gave %v", err)
	}
	var one int64
	if err := c2.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Errorf("other connection: %v", err)
	}
	if n := ts.InternalErrors(); n != 1 {
		t.Errorf("InternalErrors() = %d after a panic, want 1", n)
	}
}

// rawClient speaks the protocol by hand, for what pgx will not do.
type rawClient struct {
	nc net.Conn
	fe *pgproto3.Frontend
}

func rawConnect(t *testing.T, ts *testServer) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	rc := &rawClient{nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
	rc.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "raw"}})
	if err := rc.fe.Flush(); err != nil {
		t.Fatal(err)
	}
	rc.until(t, 'Z')
	return rc
}

// until reads messages up to the first of the given type.
func (rc *rawClient) until(t *testing.T, typ byte) pgproto3.BackendMessage {
	t.Helper()
	for {
		msg, err := rc.fe.Receive()
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		var got byte
		switch msg.(type) {
		case *pgproto3.ReadyForQuery:
			got = 'Z'
		case *pgproto3.DataRow:
			got = 'D'
		case *pgproto3.ErrorResponse:
			got = 'E'
		case *pgproto3.EmptyQueryResponse:
			got = 'I'
		}
		if got == typ {
			return msg
		}
	}
}

func (rc *rawClient) query(t *testing.T, q string) {
	t.Helper()
	rc.fe.Send(&pgproto3.Query{String: q})
	if err := rc.fe.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestClientGoneMidResult(t *testing.T) {
	ts := startServer(t)
	rc := rawConnect(t, ts)
	rc.query(t, "stream")
	for range 3 {
		rc.until(t, 'D')
	}
	rc.nc.Close()
	if got := waitFor(t, ts.be.rowsClosed, "the stream to stop"); got != "stream" {
		t.Errorf("closed %q", got)
	}
	// The server goes on serving others.
	rc2 := rawConnect(t, ts)
	rc2.query(t, "SELECT 1")
	if d := rc2.until(t, 'D').(*pgproto3.DataRow); string(d.Values[0]) != "1" {
		t.Errorf("SELECT 1 gave %q", d.Values)
	}
}

func TestClientGoneWhileStatementIdle(t *testing.T) {
	// A streaming statement with no output yet: only reading the socket can tell
	// that the client left.
	ts := startServer(t)
	rc := rawConnect(t, ts)
	rc.query(t, "block")
	waitFor(t, ts.be.blockStart, "the statement to start")
	rc.nc.Close()
	if got := waitFor(t, ts.be.rowsClosed, "the statement to stop"); got != "block" {
		t.Errorf("closed %q", got)
	}
}

func TestEncryptionRequestsDeclined(t *testing.T) {
	ts := startServer(t)
	for _, code := range []uint32{80877103 /* SSLRequest */, 80877104 /* GSSENCRequest */} {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		var req [8]byte
		binary.BigEndian.PutUint32(req[0:], 8)
		binary.BigEndian.PutUint32(req[4:], code)
		nc.Write(req[:])
		var resp [1]byte
		if _, err := io.ReadFull(nc, resp[:]); err != nil || resp[0] != 'N' {
			t.Errorf("request %d: answer %q, %v", code, resp, err)
		}
		// The client may go on in plain text.
		fe := pgproto3.NewFrontend(nc, nc)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x"}})
		fe.Flush()
		for {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
		nc.Close()
	}
}

func TestStartupTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be := newFakeBackend()
	srv := NewServer(be, Options{Log: testLogger(t), StartupTimeout: 50 * time.Millisecond})
	go srv.Serve(ln)
	defer srv.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if _, err := nc.Read(b[:]); err != io.EOF {
		t.Errorf("silent client: read gave %v, want EOF from the server closing", err)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be := newFakeBackend()
	srv := NewServer(be, Options{Log: testLogger(t)})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ts := &testServer{Server: srv, be: be, addr: ln.Addr().String()}
	if got := srv.Addr(); got == nil {
		// Serve may not have registered ln yet; Addr is advisory.
		t.Log("Addr not yet known")
	}

	ctx := testCtx(t)
	var clients []*pgx.Conn
	for range 10 {
		c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://u@%s/db?sslmode=disable&default_query_exec_mode=simple_protocol", ts.addr))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	if srv.Addr().String() != ts.addr {
		t.Errorf("Addr %v, want %s", srv.Addr(), ts.addr)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := clients[0].Exec(ctx, "block")
		blocked <- err
	}()
	waitFor(t, be.blockStart, "the statement to start")

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, served, "Serve to return"); !errors.Is(err, ErrServerClosed) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve: %v", err)
	}
	if err := waitFor(t, blocked, "the blocked statement"); err == nil {
		t.Error("statement survived Close")
	}
	// Close waited for every server goroutine to call Done; one may still be
	// returning from its function for a moment after that, so the stacks are
	// polled rather than read once.
	waitNoServerGoroutines(t)
	if err := srv.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
	for _, c := range clients {
		c.Close(context.Background())
	}
	if o, c := be.opened.Load(), be.closed.Load(); o != 10 || c != 10 {
		t.Errorf("%d sessions opened, %d closed", o, c)
	}
	be.mem.AssertSize(t, 0)

	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

func TestNegotiateProtocolVersion(t *testing.T) {
	ts := startServer(t)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32,
		Parameters: map[string]string{"user": "x", "_pq_.compression": "on"}})
	fe.Flush()
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	npv, ok := msg.(*pgproto3.NegotiateProtocolVersion)
	if !ok || npv.NewestMinorProtocol != 0 || fmt.Sprint(npv.UnrecognizedOptions) != "[_pq_.compression]" {
		t.Fatalf("got %#v, want NegotiateProtocolVersion to 3.0 declining _pq_.compression", msg)
	}
	if msg, err := fe.Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := msg.(*pgproto3.AuthenticationOk); !ok {
		t.Fatalf("got %#v, want AuthenticationOk", msg)
	}
}

package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/session"
)

// FuzzConn feeds arbitrary bytes to the connection handler, over net.Pipe, as
// a client's whole side of a connection. The first byte picks the
// authentication method (trust, password, scram-sha-256); the rest is the
// stream. Behind the server is a real engine (no connectors: CREATE TABLE is
// refused), so that parsing, binding, the extended protocol and job runs are
// reached too. A finding is a panic anywhere in the connection's handling, a
// Go stack trace reaching the client, or a connection that does not end once
// its client hung up.
//
// The seed corpus is testdata/fuzz/FuzzConn (regenerate it from fuzzSeeds
// with HUMMER_WRITE_FUZZ_CORPUS=1 go test -run TestWriteFuzzCorpus ./wire/).
// CI runs: go test -run='^$' -fuzz=FuzzConn -fuzztime=20s ./wire/
func FuzzConn(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.data)
	}
	be := newEngineBackend(f, "pw")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOne(t, be, data)
	})
}

// fuzzOne serves one connection whose client sends data, waits until the
// server has handled all of it (or gave up on the client), hangs up and checks
// the outcome. It returns what the server sent (its first MiB).
func fuzzOne(t *testing.T, be engineBackend, data []byte) []byte {
	opts := Options{Users: be, StartupTimeout: 5 * time.Second, MaxMessageSize: 64 << 10,
		Log: slog.New(slog.DiscardHandler)}
	if len(data) > 0 {
		opts.Auth = AuthMethod(data[0] % 3)
		data = data[1:]
	}
	srv := NewServer(be, opts)
	var panicked atomic.Pointer[string]
	srv.onPanic = func(r any) {
		s := fmt.Sprint(r)
		panicked.Store(&s)
	}
	poke := make(chan struct{}, 1)
	wake := func() {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	srv.onStarve = wake

	client, server := net.Pipe()
	wc := &watchedConn{Conn: server, wake: wake, closed: make(chan struct{})}
	srv.startConn(wc)
	var c *conn
	srv.mu.Lock()
	for k := range srv.conns {
		c = k
	}
	srv.mu.Unlock()

	var out bytes.Buffer
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(&limitedBuffer{b: &out, max: 1 << 20}, client)
	}()
	client.SetWriteDeadline(time.Now().Add(10 * time.Second))
	client.Write(data)

	// Wait until the server has read every byte and waits for more, or hung up.
	giveUp := time.NewTimer(10 * time.Second)
	defer giveUp.Stop()
wait:
	for {
		if c == nil || wc.idle(len(data), c.reader) {
			break
		}
		select {
		case <-poke:
		case <-wc.closed:
			break wait
		case <-giveUp.C:
			t.Logf("server still busy after 10s; hanging up")
			break wait
		}
	}
	client.Close()
	<-drained
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("connection still running 30s after its client hung up:\n%s", buf[:runtime.Stack(buf, true)])
	}
	if p := panicked.Load(); p != nil {
		t.Fatalf("panic serving the connection: %s", *p)
	}
	if bytes.Contains(out.Bytes(), []byte("goroutine ")) || bytes.Contains(out.Bytes(), []byte(".go:")) {
		t.Fatalf("the client was sent Go internals: %q", out.Bytes())
	}
	return out.Bytes()
}

// TestFuzzHarnessServesWholeSessions checks that fuzzOne lets the server
// handle every message before hanging up: otherwise the fuzzer would only
// ever reach the start of a session.
func TestFuzzHarnessServesWholeSessions(t *testing.T) {
	be := newEngineBackend(t, "pw")
	for _, s := range fuzzSeeds() {
		var want []string
		switch s.name {
		case "simple query":
			want = []string{"C\x00\x00\x00\rSELECT 1\x00", "C\x00\x00\x00\tSHOW\x00", "\x00\x00\x00\x02ab"}
		case "extended":
			// 42 in binary (an integer: four bytes), then "xy" in text; suspended after one row, then done.
			want = []string{"\x00\x00\x00\x04\x00\x00\x00\x2a\x00\x00\x00\x02xys\x00\x00\x00\x04",
				"C\x00\x00\x00\rSELECT 0\x00", "3\x00\x00\x00\x04Z"}
		case "malformed parse":
			want = []string{"invalid Parse message", "C\x00\x00\x00\rSELECT 1\x00"}
		case "password":
			want = []string{"GRANT ALL ON *.* TO hummer"}
		case "users and grants":
			want = []string{"DROP ROLE"}
		case "views":
			want = []string{"DROP VIEW"}
		case "copy out":
			want = []string{"1\n", "COPY 1"} // bounded: no change kind
		default:
			continue
		}
		out := string(fuzzOne(t, be, s.data))
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%q", s.name, w, out)
			}
		}
	}
}

// watchedConn is the server's end of the pipe, counting what the server read
// and whether a Read is waiting.
type watchedConn struct {
	net.Conn
	wake func()

	mu       sync.Mutex
	consumed int  // bytes returned by Read. mu.
	pending  bool // a Read is in progress. mu.

	closeOnce sync.Once
	closed    chan struct{}
}

func (w *watchedConn) Read(p []byte) (int, error) {
	w.mu.Lock()
	w.pending = true
	w.mu.Unlock()
	w.wake()
	n, err := w.Conn.Read(p)
	w.mu.Lock()
	w.pending = false
	w.consumed += n
	w.mu.Unlock()
	w.wake()
	return n, err
}

func (w *watchedConn) Close() error {
	w.closeOnce.Do(func() { close(w.closed) })
	return w.Conn.Close()
}

// idle reports whether the server has read all n bytes sent and handled them:
// during startup its own Read of the socket waits; after, the socket reader
// waits at the socket (so it has buffered all it read) and the connection
// waits at the reader with nothing buffered.
//
// reader is looked up after the socket's state: if there is no reader then,
// there was none when the pending Read was seen, so that Read was startup's.
func (w *watchedConn) idle(n int, reader func() *connReader) bool {
	w.mu.Lock()
	done := w.consumed >= n && w.pending
	w.mu.Unlock()
	if !done {
		return false
	}
	rd := reader()
	return rd == nil || rd.starving()
}

// limitedBuffer keeps the first max bytes written and discards the rest.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// engineBackend serves sessions of a real engine, as cmd/hummer does, with the
// catalog's users (the superuser hummer has the password given).
type engineBackend struct{ e *session.Engine }

func newEngineBackend(t testing.TB, password string) engineBackend {
	t.Helper()
	reg := exec.NewRegistry()
	operators.Register(reg)
	e, err := session.Open(session.Config{
		Registry: reg,
		Validate: func(exec.ConnectorSpec) error { return fmt.Errorf("%w: no connectors here", exec.ErrUnknownConnector) },
		Slots:    2,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.BootstrapSuperuser(password); err != nil {
		t.Fatal(err)
	}
	return engineBackend{e}
}

func (b engineBackend) NewSession(st session.Startup) (Session, error) { return b.e.StartSession(st) }

func (b engineBackend) LookupUser(name string) (User, bool) {
	u, ok := b.e.User(name)
	if !ok {
		return User{}, false
	}
	return User{Verifier: u.Verifier, Superuser: u.Superuser}, true
}

// A fuzzSeed is one input of the seed corpus.
type fuzzSeed struct {
	name string
	data []byte
}

// enc appends the encodings of msgs.
func enc(b []byte, msgs ...pgproto3.FrontendMessage) []byte {
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			panic(err)
		}
	}
	return b
}

func startupMsg(params ...string) *pgproto3.StartupMessage {
	m := &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "hummer"}}
	for i := 0; i+1 < len(params); i += 2 {
		m.Parameters[params[i]] = params[i+1]
	}
	return m
}

// startupInOrder encodes a startup packet with its parameters in the order
// given (StartupMessage.Encode follows a map's random order, and the corpus
// files must not change from run to run).
func startupInOrder(version uint32, kv ...string) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, version)
	for _, s := range kv {
		b = append(append(b, s...), 0)
	}
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

// fuzzSeeds are the corpus: well-formed sessions of every kind, and the
// classic malformations.
func fuzzSeeds() []fuzzSeed {
	const trust, password, scram = 0, 1, 2
	seed := func(mode byte, msgs ...pgproto3.FrontendMessage) []byte {
		return enc([]byte{mode}, msgs...)
	}
	raw := func(b []byte, more ...[]byte) []byte {
		for _, m := range more {
			b = append(b, m...)
		}
		return b
	}
	header := func(typ byte, n uint32) []byte {
		h := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[1:], n)
		return h
	}
	sslRequest := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), codeSSLRequest)
	gssRequest := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), codeGSSENCRequest)
	extended := []pgproto3.FrontendMessage{
		&pgproto3.Parse{Name: "s1", Query: "SELECT 1 + $1 AS n, 'x' || $2 AS s"},
		&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
		&pgproto3.Bind{PreparedStatement: "s1", DestinationPortal: "p1", Parameters: [][]byte{[]byte("41"), []byte("y")},
			ResultFormatCodes: []int16{1, 0}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p1"},
		&pgproto3.Execute{Portal: "p1", MaxRows: 1},
		&pgproto3.Execute{Portal: "p1"},
		&pgproto3.Close{ObjectType: 'P', Name: "p1"},
		&pgproto3.Close{ObjectType: 'S', Name: "s1"},
		&pgproto3.Sync{},
	}
	return []fuzzSeed{
		{"empty", nil},
		{"simple query", seed(trust, startupMsg(), &pgproto3.Query{String: "SELECT 1; SHOW TABLES; SELECT 'a' || 'b'"}, &pgproto3.Terminate{})},
		{"extended", seed(trust, append([]pgproto3.FrontendMessage{startupMsg()}, extended...)...)},
		{"extended out of order", seed(trust, startupMsg(), &pgproto3.Execute{Portal: "nope"}, &pgproto3.Bind{PreparedStatement: "nope"},
			&pgproto3.Sync{}, &pgproto3.Describe{ObjectType: 'S', Name: "nope"}, &pgproto3.Sync{}, &pgproto3.Sync{},
			&pgproto3.Parse{Query: "SELECT 1; SELECT 2"}, &pgproto3.Sync{}, &pgproto3.Query{String: "SELECT 1"})},
		{"malformed parse", raw(seed(trust, startupMsg()), header('P', 7), []byte("xyz"),
			enc(nil, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}, &pgproto3.Query{String: "SELECT 2"}))},
		{"malformed query", raw(seed(trust, startupMsg()), header('Q', 8), []byte("SELE"), enc(nil, &pgproto3.Query{String: "SELECT 3"}))},
		{"password", seed(password, startupMsg(), &pgproto3.PasswordMessage{Password: "pw"}, &pgproto3.Query{String: "SHOW GRANTS"})},
		{"wrong password", seed(password, startupMsg(), &pgproto3.PasswordMessage{Password: "nope"})},
		{"scram", seed(scram, startupMsg(), &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abcdef")},
			&pgproto3.SASLResponse{Data: []byte("c=biws,r=abcdef,p=AAAA")})},
		{"scram plus without tls", seed(scram, startupMsg(), &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS",
			Data: []byte("p=tls-server-end-point,,n=,r=x")})},
		{"encryption requests", raw([]byte{trust}, sslRequest, gssRequest, enc(nil, startupMsg(), &pgproto3.Query{String: "SELECT 1"}))},
		{"cancel", enc([]byte{trust}, &pgproto3.CancelRequest{ProcessID: 42, SecretKey: []byte{1, 2, 3, 4}})},
		{"protocol 3.2 options", raw([]byte{trust}, startupInOrder(pgproto3.ProtocolVersion32, "user", "hummer", "_pq_.x", "1", "database", "d"),
			enc(nil, &pgproto3.Query{String: "SELECT 1"}))},
		{"huge length", raw(seed(trust, startupMsg()), header('Q', 0x7fffffff), []byte("SELECT"))},
		{"just under the limit", raw(seed(trust, startupMsg()), header('Q', 64<<10), []byte("SELECT 1"))},
		{"negative length", raw(seed(trust, startupMsg()), header('Q', 0xfffffff0))},
		{"startup too long", raw([]byte{trust}, header(0, 10001)[1:], []byte{0, 3, 0, 0})},
		{"unknown message", raw(seed(trust, startupMsg()), header('z', 4))},
		{"copy and calls", seed(trust, startupMsg(), &pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyDone{}, &pgproto3.CopyFail{Message: "m"},
			&pgproto3.FunctionCall{Function: 1}, &pgproto3.Flush{}, &pgproto3.Query{String: ""}, &pgproto3.Query{String: ";"})},
		{"users and grants", seed(trust, startupMsg(), &pgproto3.Query{String: "CREATE USER IF NOT EXISTS u IDENTIFIED BY 'p'; " +
			"GRANT SELECT ON t TO u; REVOKE ALL ON *.* FROM u; SHOW GRANTS FOR u; ALTER USER u IDENTIFIED BY 'q'; DROP USER u"})},
		{"statement timeout", seed(trust, startupMsg(), &pgproto3.Query{String: "SET statement_timeout = '1ms'; SELECT count(*) FROM (SELECT 1) t; SET statement_timeout = 0"})},
		{"views", seed(trust, startupMsg(), &pgproto3.Query{String: "CREATE VIEW v AS SELECT 1 AS a; SELECT a FROM v; DROP VIEW v"})},
		{"copy out", seed(trust, startupMsg(), &pgproto3.Query{String: "COPY (SELECT 1) TO STDOUT"})},
		{"errors", seed(trust, startupMsg(), &pgproto3.Query{String: "SELECT 1/0"}, &pgproto3.Query{String: "SELEC"},
			&pgproto3.Query{String: "SELECT * FROM nope"}, &pgproto3.Query{String: "KILL 99"})},
		{"no user", seed(trust, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{}})},
		{"unknown user", seed(trust, startupMsg("user", "mallory"))},
		{"protocol 2", raw([]byte{trust}, []byte{0, 0, 0, 9, 0, 2, 0, 0, 0})},
	}
}

// TestWriteFuzzCorpus writes fuzzSeeds to testdata/fuzz/FuzzConn when
// HUMMER_WRITE_FUZZ_CORPUS=1, and otherwise checks the files are there.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzConn")
	for i, s := range fuzzSeeds() {
		path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s.data)) + ")\n"
		if os.Getenv("HUMMER_WRITE_FUZZ_CORPUS") == "1" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != body {
			t.Errorf("%s (%s) is missing or stale: regenerate with HUMMER_WRITE_FUZZ_CORPUS=1 go test -run TestWriteFuzzCorpus ./wire/", path, s.name)
		}
	}
}

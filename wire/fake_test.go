package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// fakeBackend is a Backend whose sessions answer a fixed set of statements with
// canned results built from a checked allocator, so tests can also assert that the
// server released every batch.
type fakeBackend struct {
	mem *memory.CheckedAllocator

	opened, closed atomic.Int64 // sessions

	// Streaming statements report here when their rows start and stop.
	mu          sync.Mutex
	users       []string      // user/database of each session opened. mu.
	blockStart  chan struct{} // receives when a "block" statement starts waiting
	streamStart chan struct{} // receives when a "stream" statement sent its first batch
	rowsClosed  chan string   // receives the statement when streaming Rows close
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{
		mem:         memory.NewCheckedAllocator(memory.DefaultAllocator),
		blockStart:  make(chan struct{}, 100),
		streamStart: make(chan struct{}, 100),
		rowsClosed:  make(chan string, 100),
	}
}

func (b *fakeBackend) NewSession(st session.Startup) (Session, error) {
	b.opened.Add(1)
	b.mu.Lock()
	b.users = append(b.users, st.User+"/"+st.Database)
	b.mu.Unlock()
	return &fakeSession{b: b, start: st}, nil
}

type fakeSession struct {
	b      *fakeBackend
	closed bool
	start  session.Startup
	told   bool // ParameterStatus was called
}

// ParameterStatus tells the client, once, what a session of the engine
// would at startup.
func (s *fakeSession) ParameterStatus() []session.Param {
	if s.told {
		return nil
	}
	s.told = true
	app := ""
	for _, p := range s.start.Settings {
		if p.Name == "application_name" {
			app = p.Value
		}
	}
	su := map[bool]string{true: "on", false: "off"}[s.start.Superuser]
	return []session.Param{{Name: "application_name", Value: app}, {Name: "client_encoding", Value: "UTF8"},
		{Name: "DateStyle", Value: "ISO, MDY"}, {Name: "integer_datetimes", Value: "on"}, {Name: "is_superuser", Value: su},
		{Name: "server_encoding", Value: "UTF8"}, {Name: "server_version", Value: s.start.ServerVersion},
		{Name: "session_authorization", Value: s.start.User}, {Name: "standard_conforming_strings", Value: "on"},
		{Name: "TimeZone", Value: "UTC"}}
}

func (s *fakeSession) Close() {
	if s.closed {
		panic("session closed twice")
	}
	s.closed = true
	s.b.closed.Add(1)
}

// Exec splits query at semicolons (the fake knows no quoting) and answers each
// statement with fakeStatement.
func (s *fakeSession) Exec(ctx context.Context, query string, emit func(*session.Result) error) error {
	offset := 0
	for _, stmt := range strings.Split(query, ";") {
		pos := utf8.RuneCountInString(query[:offset]) + len(stmt) - len(strings.TrimLeft(stmt, " \t\n")) + 1
		offset += len(stmt) + 1
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			continue
		}
		r, err := s.b.statement(ctx, stmt, pos)
		if err != nil {
			return err
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

// stateErr is an error that carries its own SQLSTATE, as connectors' errors will.
type stateErr struct{ code, msg string }

func (e *stateErr) Error() string    { return e.msg }
func (e *stateErr) SQLState() string { return e.code }

// statement answers one statement; pos is its 1-based character position.
func (b *fakeBackend) statement(ctx context.Context, stmt string, pos int) (*session.Result, error) {
	switch {
	case stmt == "SELECT 1":
		return b.rowsResult("SELECT", types.Schema{{Name: "?column?", Type: types.Int64Type}}, []any{int64(1)}), nil
	case stmt == "SELECT types":
		return b.typesResult(), nil
	case strings.HasPrefix(stmt, "gen "):
		n, err := strconv.Atoi(stmt[4:])
		if err != nil {
			return nil, err
		}
		return &session.Result{Tag: "SELECT", Rows: &genRows{b: b, n: n, batch: 1000}}, nil
	case stmt == "stream":
		return &session.Result{Tag: "SELECT", Rows: &genRows{b: b, n: -1, batch: 100, name: stmt}}, nil
	case stmt == "block":
		return &session.Result{Tag: "SELECT", Rows: &blockRows{b: b}}, nil
	case stmt == "midstream":
		return &session.Result{Tag: "SELECT", Rows: &genRows{b: b, n: 10, batch: 5, failAfter: 1}}, nil
	case stmt == "CREATE TABLE t":
		return &session.Result{Tag: "CREATE TABLE"}, nil
	case stmt == "notice":
		return &session.Result{Tag: "SET", Notices: []string{"first notice", "second notice"}}, nil
	case strings.HasPrefix(stmt, "table "):
		k, err := strconv.Atoi(stmt[6:])
		if err != nil || k >= len(tableCases) {
			return nil, fmt.Errorf("no table %q", stmt)
		}
		tc := tableCases[k]
		return &session.Result{Tag: "SELECT", Rows: &sliceRows{schema: tc.schema, batches: buildBatches(b.mem, tc.schema, tc.rows)}}, nil
	case stmt == "SHOW x":
		return b.rowsResult("SHOW", types.Schema{{Name: "x", Type: types.StringType}}, []any{"on"}), nil
	case stmt == "err table":
		return nil, sql.Errorf(sql.ErrUnknownTable, pos+4, `table "nope" does not exist`)
	case stmt == "err stater":
		return nil, fmt.Errorf("evaluating: %w", &stateErr{"22012", "division by zero"})
	case stmt == "err nofile":
		return nil, fmt.Errorf("file source: %w: %w", exec.ErrBadInput, os.ErrNotExist)
	case stmt == "err internal":
		return nil, errors.New("secret internal detail")
	case stmt == "panic":
		panic("boom")
	}
	return nil, sql.Errorf(sql.ErrSyntax, pos, "syntax error at or near %q", strings.Fields(stmt)[0])
}

// rowsResult returns a result of one batch with one row of the given values.
func (b *fakeBackend) rowsResult(tag string, schema types.Schema, row []any) *session.Result {
	return &session.Result{Tag: tag, Rows: &sliceRows{schema: schema, batches: buildBatches(b.mem, schema, [][]any{row})}}
}

// buildBatches returns rows as batches of at most two rows (so that tests cross
// batch boundaries). Values are int64, float64, string, bool or nil.
func buildBatches(mem memory.Allocator, schema types.Schema, rows [][]any) []arrow.RecordBatch {
	if len(schema) == 0 {
		return []arrow.RecordBatch{array.NewRecordBatch(schema.Arrow(), nil, int64(len(rows)))}
	}
	var out []arrow.RecordBatch
	rb := array.NewRecordBuilder(mem, schema.Arrow())
	defer rb.Release()
	for i, row := range rows {
		for j, v := range row {
			switch v := v.(type) {
			case nil:
				rb.Field(j).AppendNull()
			case int64:
				rb.Field(j).(*array.Int64Builder).Append(v)
			case float64:
				rb.Field(j).(*array.Float64Builder).Append(v)
			case string:
				rb.Field(j).(*array.StringBuilder).Append(v)
			case bool:
				rb.Field(j).(*array.BooleanBuilder).Append(v)
			}
		}
		if i%2 == 1 || i == len(rows)-1 {
			out = append(out, rb.NewRecordBatch())
		}
	}
	if len(out) == 0 {
		out = append(out, rb.NewRecordBatch())
	}
	return out
}

// typesSchema has one column of each engine type.
var typesSchema = types.Schema{
	{Name: "b", Type: types.BoolType},
	{Name: "i", Type: types.Int64Type},
	{Name: "f", Type: types.Float64Type},
	{Name: "d", Type: types.DecimalType(10, 2)},
	{Name: "s", Type: types.StringType},
	{Name: "ts", Type: types.TimestampType},
	{Name: "n", Type: types.NullType},
}

// typesResult has two rows: values, then NULLs.
func (b *fakeBackend) typesResult() *session.Result {
	rb := array.NewRecordBuilder(b.mem, typesSchema.Arrow())
	defer rb.Release()
	rb.Field(0).(*array.BooleanBuilder).Append(true)
	rb.Field(1).(*array.Int64Builder).Append(-9223372036854775808)
	rb.Field(2).(*array.Float64Builder).Append(1.5e-07)
	rb.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(-150))
	rb.Field(4).(*array.StringBuilder).Append("héllo, 'wörld'")
	rb.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1704164645120000)) // 2024-01-02 03:04:05.12
	rb.Field(6).AppendNull()
	for _, f := range rb.Fields() {
		f.AppendNull()
	}
	return &session.Result{Tag: "SELECT", Rows: &sliceRows{schema: typesSchema, batches: []arrow.RecordBatch{rb.NewRecordBatch()}}}
}

// sliceRows returns prepared batches.
type sliceRows struct {
	schema  types.Schema
	batches []arrow.RecordBatch
}

func (r *sliceRows) Schema() types.Schema { return r.schema }

func (r *sliceRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if len(r.batches) == 0 {
		return nil, io.EOF
	}
	b := r.batches[0]
	r.batches = r.batches[1:]
	return b, nil
}

func (r *sliceRows) Close() {
	for _, b := range r.batches {
		b.Release()
	}
	r.batches = nil
}

// genRows produces n rows (forever if n < 0) of one BIGINT column "n" counting from
// 0, batch rows at a time, optionally failing after failAfter batches.
type genRows struct {
	b         *fakeBackend
	n, batch  int
	name      string // reported on b.rowsClosed when set
	failAfter int
	next      int
	batches   int
	closed    bool
}

var genSchema = types.Schema{{Name: "n", Type: types.Int64Type}}

func (r *genRows) Schema() types.Schema { return genSchema }

func (r *genRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.failAfter > 0 && r.batches == r.failAfter {
		return nil, &stateErr{"22012", "division by zero"}
	}
	if r.n >= 0 && r.next >= r.n {
		return nil, io.EOF
	}
	k := r.batch
	if r.n >= 0 {
		k = min(k, r.n-r.next)
	}
	bld := array.NewInt64Builder(r.b.mem)
	defer bld.Release()
	bld.Reserve(k)
	for i := range k {
		bld.UnsafeAppend(int64(r.next + i))
	}
	r.next += k
	r.batches++
	arr := bld.NewArray()
	defer arr.Release()
	if r.name != "" && r.batches == 1 {
		r.b.streamStart <- struct{}{}
	}
	return array.NewRecordBatch(genSchema.Arrow(), []arrow.Array{arr}, int64(k)), nil
}

func (r *genRows) Close() {
	if !r.closed && r.name != "" {
		r.b.rowsClosed <- r.name
	}
	r.closed = true
}

// blockRows waits for its context to end, like a streaming query with no input.
type blockRows struct {
	b      *fakeBackend
	closed bool
}

func (r *blockRows) Schema() types.Schema { return genSchema }

func (r *blockRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	r.b.blockStart <- struct{}{}
	<-ctx.Done()
	return nil, fmt.Errorf("source stopped: %w", ctx.Err())
}

func (r *blockRows) Close() {
	if !r.closed {
		r.b.rowsClosed <- "block"
	}
	r.closed = true
}

// testServer is a Server on a loopback port with a fake backend.
type testServer struct {
	*Server
	be   *fakeBackend
	addr string // host:port
	port string
	done chan error // Serve's result
}

// startServer starts a server; cleanup closes it and checks that nothing leaked.
func startServer(t *testing.T) *testServer {
	t.Helper()
	return startServerWith(t, Options{})
}

// startServerWith starts a server with opts (and a test logger).
func startServerWith(t *testing.T, opts Options) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be := newFakeBackend()
	opts.Log = testLogger(t)
	ts := &testServer{
		Server: NewServer(be, opts),
		be:     be,
		addr:   ln.Addr().String(),
		done:   make(chan error, 1),
	}
	_, ts.port, _ = net.SplitHostPort(ts.addr)
	go func() { ts.done <- ts.Serve(ln) }()
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-ts.done:
			if !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Close")
		}
		waitNoServerGoroutines(t)
		if o, c := be.opened.Load(), be.closed.Load(); o != c {
			t.Errorf("%d sessions opened, %d closed", o, c)
		}
		be.mem.AssertSize(t, 0)
	})
	return ts
}

// waitNoServerGoroutines waits until no goroutine runs this package's server code,
// failing the test after a deadline. It is a hand-written goleak: it looks at the
// stacks rather than counting, so the test framework's and clients' goroutines do
// not matter.
func waitNoServerGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaked := serverGoroutines()
		if leaked == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server goroutines still running after Close:\n%s", leaked)
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

// serverGoroutines returns the stacks of goroutines in non-test server code.
func serverGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, fn := range []string{"wire.(*conn)", "wire.(*connReader)", "wire.(*Server).Serve", "wire.(*Server).startConn"} {
			if strings.Contains(g, "hummer/"+fn) {
				leaked = append(leaked, g)
				break
			}
		}
	}
	return strings.Join(leaked, "\n\n")
}

// testLogger logs through t, so a failing test shows the server's view.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitFor waits for a value on ch, failing the test after a deadline.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

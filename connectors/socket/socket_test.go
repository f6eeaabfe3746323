package socket

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var textSchema = types.Schema{{Name: "line", Type: types.StringType}}

var rowSchema = types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType}}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		url    string
		schema types.Schema
		key    []int
		msg    string // "" for a good table
	}{
		{url: "socket://localhost:9999", schema: textSchema},
		{url: "socket://127.0.0.1:9999/", schema: textSchema},
		{url: "socket://[::1]:9999?format=text", schema: textSchema},
		{url: "socket://h:1?format=CSV", schema: rowSchema},
		{url: "socket://h:65535?format=json", schema: rowSchema},
		{url: "socket://localhost", schema: textSchema, msg: "want a host and a port"},
		{url: "socket://:9999", schema: textSchema, msg: "want a host and a port"},
		{url: "socket://h:0", schema: textSchema, msg: `port "0" is not a TCP port`},
		{url: "socket://h:99999", schema: textSchema, msg: `port "99999" is not a TCP port`},
		{url: "socket://h:http", schema: textSchema, msg: `invalid port ":http"`},
		{url: "tcp://h:9999", schema: textSchema, msg: "scheme must be socket"},
		{url: "socket:h:9999", schema: textSchema, msg: "want socket://host:port"},
		{url: "socket://u@h:9999", schema: textSchema, msg: "user information"},
		{url: "socket://h:9999/lines", schema: textSchema, msg: "a path is not allowed"},
		{url: "socket://h:9999#x", schema: textSchema, msg: "a fragment is not allowed"},
		{url: "socket://h:9999?format=xml", schema: textSchema, msg: `option format: "xml" is not one of text, csv, json`},
		{url: "socket://h:9999?delimiter=;", schema: textSchema, msg: `unknown option "delimiter" (valid options: format)`},
		{url: "socket://h:9999", schema: rowSchema, msg: "format=text needs exactly one TEXT column"},
		{url: "socket://h:9999?format=csv", schema: rowSchema, key: []int{0}, msg: "takes no PRIMARY KEY"},
	} {
		err := Validate(exec.ConnectorSpec{Connector: Name, URL: tc.url, Schema: tc.schema, Key: tc.key})
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.msg != "" && (!errors.Is(err, spec.ErrBadOption) || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s: %v, want ErrBadOption with %q", tc.url, err, tc.msg)
		}
	}
}

// server is a TCP server of the test: each connection it accepts gets the
// next of its scripts, written in full, and is then closed (unless the script
// says to hold it).
type server struct {
	ln    net.Listener
	conns chan net.Conn // the connections accepted, when the script holds them
}

// serve listens on addr ("127.0.0.1:0" for any port) and serves scripts, one
// per connection; a script of nil holds its connection open, sending nothing,
// for the test to write to.
func serve(t *testing.T, addr string, scripts ...[]string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, conns: make(chan net.Conn, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if i >= len(scripts) || scripts[i] == nil {
				s.conns <- c
				continue
			}
			for _, chunk := range scripts[i] {
				c.Write([]byte(chunk))
			}
			c.Close()
		}
	}()
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

// accepted returns the next connection the server holds open.
func (s *server) accepted(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the source to connect")
		return nil
	}
}

// running is a source subtask running in the background.
type running struct {
	t      *testing.T
	col    *conntest.Collector
	tc     *exec.TaskContext
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, subtask, parallelism int) *running {
	t.Helper()
	cfg, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, col: &conntest.Collector{}, tc: conntest.TaskContext(t, mem, subtask, parallelism), cancel: cancel, done: make(chan error, 1)}
	src := newSource(cfg)
	if err := src.Open(ctx, r.tc); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := src.Run(ctx, r.col)
		if cerr := src.Close(); cerr != nil && err == nil {
			err = cerr
		}
		r.done <- err
	}()
	return r
}

// stop cancels the source, checks that Run returned context.Canceled, and
// returns the rows it emitted.
func (r *running) stop() []string {
	r.t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if !errors.Is(err, context.Canceled) {
			r.t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		r.t.Fatal("Run did not return within 5s of the cancel")
	}
	rows := r.col.Rows()
	r.col.Release()
	return rows
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

func fastBackoff(t *testing.T) {
	lo, hi := minBackoff, maxBackoff
	minBackoff, maxBackoff = 5*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { minBackoff, maxBackoff = lo, hi })
}

func textSpec(addr string) exec.ConnectorSpec {
	return exec.ConnectorSpec{Connector: Name, URL: "socket://" + addr, Schema: textSchema}
}

// TestLines: each line without its newline, a trailing \r dropped, empty lines
// kept, a last line without a newline kept; lines split across writes are
// whole; when the server closes the connection the source connects again and
// reads the next one's lines.
func TestLines(t *testing.T) {
	fastBackoff(t)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	srv := serve(t, "127.0.0.1:0",
		[]string{"to be or\n", "not to be\r\n\nthat is", " the question\n", "tail"},
		[]string{"second connection\n"},
		nil)
	r := start(t, mem, textSpec(srv.addr()), 0, 1)
	held := srv.accepted(t)
	defer held.Close()
	want := []string{"to be or", "not to be", "", "that is the question", "tail", "second connection"}
	waitFor(t, "the lines of two connections", func() bool { return r.col.NumRows() >= len(want) })
	if _, err := held.Write([]byte("third\n")); err != nil {
		t.Fatal(err)
	}
	want = append(want, "third")
	waitFor(t, "a line written later", func() bool { return r.col.NumRows() >= len(want) })
	if s := r.tc.Metrics.Status(); s != "" {
		t.Errorf("status %q while connected, want none", s)
	}
	if got := r.stop(); !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if n := r.tc.Metrics.BadRecords.Load(); n != 0 {
		t.Errorf("%d bad records", n)
	}
}

// TestServerNotThereYet: while nothing listens, the status says the source is
// connecting; once a server listens there, its lines arrive and the status
// clears; when it goes away, the status says so.
func TestServerNotThereYet(t *testing.T) {
	// The default backoff, so that each status lasts long enough to be seen.
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := start(t, mem, textSpec(addr), 0, 1)
	waitFor(t, "a status saying the source is connecting", func() bool {
		return strings.HasPrefix(r.tc.Metrics.Status(), "connecting to socket "+addr+": ")
	})
	srv := serve(t, addr, nil)
	c := srv.accepted(t)
	c.Write([]byte("hello\nworld\n"))
	waitFor(t, "two lines", func() bool { return r.col.NumRows() >= 2 })
	waitFor(t, "the status to clear", func() bool { return r.tc.Metrics.Status() == "" })
	srv.ln.Close()
	c.Close()
	waitFor(t, "a status saying the server closed the connection", func() bool {
		return strings.Contains(r.tc.Metrics.Status(), "closed the connection after 2 lines")
	})
	if got := r.stop(); !slices.Equal(got, []string{"hello", "world"}) {
		t.Errorf("rows %q", got)
	}
}

// TestBadRecords: lines the format cannot parse are counted and skipped, the
// first described; the rest of the stream is read.
func TestBadRecords(t *testing.T) {
	for _, tc := range []struct {
		format string
		lines  string
		want   []string
		bad    int64
		first  string
	}{
		{"csv", "1,apple\nx,pear\n2,\"plum, red\"\n3,\"open\n4,\n5,a,b\n", []string{"1|apple", `2|plum, red`, "4|NULL"}, 3, `line 2: column id: `},
		{"json", "{\"id\": 1, \"name\": \"a\"}\n[1]\n\n{\"ID\": 2}\n{\"id\": \"z\"}\n", []string{"1|a", "2|NULL"}, 3, "line 2: not a JSON object"},
		{"text", "good\n\xff\xfe\nalso good\n", []string{"good", "also good"}, 1, "line 2: invalid UTF-8"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
			defer mem.AssertSize(t, 0)
			srv := serve(t, "127.0.0.1:0", []string{tc.lines}, nil)
			schema := rowSchema
			if tc.format == "text" {
				schema = textSchema
			}
			r := start(t, mem, exec.ConnectorSpec{Connector: Name, URL: "socket://" + srv.addr() + "?format=" + tc.format, Schema: schema}, 0, 1)
			waitFor(t, "the good rows and the bad records", func() bool {
				return r.col.NumRows() >= len(tc.want) && r.tc.Metrics.BadRecords.Load() >= tc.bad
			})
			waitFor(t, "the second connection", func() bool { return len(srv.conns) > 0 })
			if got := r.stop(); !slices.Equal(got, tc.want) {
				t.Errorf("rows %q, want %q", got, tc.want)
			}
			if n := r.tc.Metrics.BadRecords.Load(); n != tc.bad {
				t.Errorf("%d bad records, want %d", n, tc.bad)
			}
			if first := r.tc.Metrics.FirstBadRecord(); !strings.Contains(first, tc.first) {
				t.Errorf("first bad record %q, want it to hold %q", first, tc.first)
			}
		})
	}
}

// TestProjection: a query reading some columns of a csv table gets them, in
// its order; a record bad in a column it does not read is still bad.
func TestProjection(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	srv := serve(t, "127.0.0.1:0", []string{"1,a\nx,b\n3,c\n"}, nil)
	r := start(t, mem, exec.ConnectorSpec{Connector: Name, URL: "socket://" + srv.addr() + "?format=csv", Schema: rowSchema, Columns: []int{1}}, 0, 1)
	waitFor(t, "two rows and a bad record", func() bool { return r.col.NumRows() >= 2 && r.tc.Metrics.BadRecords.Load() >= 1 })
	waitFor(t, "the second connection", func() bool { return len(srv.conns) > 0 })
	if got := r.stop(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("rows %q", got)
	}
}

// TestLongLine: a line longer than maxLineBytes is a bad record, and the lines
// after it are read; a line just short of it is a row.
func TestLongLine(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	fits := strings.Repeat("a", maxLineBytes)
	srv := serve(t, "127.0.0.1:0", []string{"before\n", strings.Repeat("x", 3*maxLineBytes), "\n", fits + "\n", "after\n"}, nil)
	r := start(t, mem, textSpec(srv.addr()), 0, 1)
	waitFor(t, "three rows", func() bool { return r.col.NumRows() >= 3 })
	waitFor(t, "the second connection", func() bool { return len(srv.conns) > 0 })
	if got := r.stop(); len(got) != 3 || got[0] != "before" || got[1] != fits || got[2] != "after" {
		t.Errorf("%d rows, want before, the line that fits, after", len(got))
	}
	if n := r.tc.Metrics.BadRecords.Load(); n != 1 {
		t.Errorf("%d bad records, want 1", n)
	}
	if first := r.tc.Metrics.FirstBadRecord(); !strings.Contains(first, "line 2: a line longer than") {
		t.Errorf("first bad record %q", first)
	}
}

// TestOtherSubtasksEmitNothing: subtask 1 of 2 never connects, and says it
// is idle; subtask 0 reads every line.
func TestOtherSubtasksEmitNothing(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	srv := serve(t, "127.0.0.1:0", nil)
	other := start(t, mem, textSpec(srv.addr()), 1, 2)
	first := start(t, mem, textSpec(srv.addr()), 0, 2)
	c := srv.accepted(t)
	defer c.Close()
	c.Write([]byte("one\ntwo\n"))
	waitFor(t, "two rows", func() bool { return first.col.NumRows() >= 2 })
	if got := first.stop(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("subtask 0: %q", got)
	}
	if got := other.stop(); len(got) != 0 {
		t.Errorf("subtask 1: %q, want nothing", got)
	}
	if s := other.col.Signals; len(s) != 1 || s[0].Kind != exec.Idle {
		t.Errorf("subtask 1's signals %v, want idle", s)
	}
	if n := len(srv.conns); n != 0 {
		t.Errorf("%d more connections, want none from subtask 1", n)
	}
}

// TestDownstreamError: an error of the collector fails Run with it rather
// than making the source connect again.
func TestDownstreamError(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	srv := serve(t, "127.0.0.1:0", []string{"a\n"})
	cfg, err := parse(textSpec(srv.addr()))
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(cfg)
	if err := src.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := src.Run(ctx, failing{boom}); !errors.Is(err, boom) {
		t.Errorf("Run: %v, want %v", err, boom)
	}
}

type failing struct{ err error }

func (f failing) Collect(context.Context, exec.Batch) error        { return f.err }
func (f failing) CollectSignal(context.Context, exec.Signal) error { return nil }

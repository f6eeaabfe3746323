package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"
	"testing"
	"time"
)

// socketWordCount is the WordCount of TestSocketWordCount, over the socket
// table lines_in.
const socketWordCount = `SELECT word, count(*) AS n
	FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM lines_in) t
	WHERE word <> '' GROUP BY word`

// lineServer is the test's stand-in for `nc -lk`: a TCP listener whose
// connections it hands to the test, which writes lines to them.
type lineServer struct {
	ln    net.Listener
	conns chan net.Conn
}

func listenLines(t *testing.T, addr string) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{ln: ln, conns: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns <- c
		}
	}()
	t.Cleanup(s.close)
	return s
}

// close stops listening and closes the connections not taken.
func (s *lineServer) close() {
	s.ln.Close()
	for {
		select {
		case c := <-s.conns:
			c.Close()
		default:
			return
		}
	}
}

// accept returns the next connection, waiting up to ctx.
func (s *lineServer) accept(t *testing.T, ctx context.Context) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-ctx.Done():
		t.Fatal("timed out waiting for the socket source to connect")
		return nil
	}
}

// TestSocketWordCount runs the classic streaming WordCount over a socket
// table: a view counts the words of the lines a TCP server (the test, as
// `nc -lk` would) sends; its counts equal a hand count of the lines; lines
// sent later are counted too; when the server goes away SHOW PROCESSLIST
// says the source is connecting, and once it is back its lines are counted
// as well.
func TestSocketWordCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := listenLines(t, "127.0.0.1:0")
	addr := srv.ln.Addr().String()
	pg := startTestServer(t)
	conn := connectPgx(t, ctx, pg)
	defer conn.Close(context.Background())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(fmt.Sprintf("CREATE TABLE lines_in (line TEXT) ENGINE=socket CONNECTION='socket://%s'", addr))
	if _, err := conn.Exec(ctx, "CREATE TABLE bad_in (line TEXT) ENGINE=socket CONNECTION='socket://localhost'"); err == nil ||
		!strings.Contains(err.Error(), "want a host and a port") {
		t.Errorf("CREATE TABLE with a socket URL without a port: %v", err)
	}
	exec("CREATE VIEW wc AS " + socketWordCount)

	counts := func() map[string]int64 {
		rows, err := conn.Query(ctx, "SELECT word, n FROM wc")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for rows.Next() {
			var w string
			var n int64
			if err := rows.Scan(&w, &n); err != nil {
				t.Fatal(err)
			}
			got[w] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The hand count of everything sent so far.
	want := map[string]int64{}
	send := func(c net.Conn, text string) {
		t.Helper()
		if _, err := c.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}

	c := srv.accept(t, ctx)
	send(c, "To be, or not to be,\r\nthat is the question\n\n")
	maps.Copy(want, map[string]int64{"to": 2, "be,": 2, "or": 1, "not": 1, "that": 1, "is": 1, "the": 1, "question": 1})
	waitFor(t, ctx, "the view to count the first lines", func() bool { return maps.Equal(counts(), want) })

	send(c, "the  Question is\nTO BE\n")
	want["the"]++
	want["question"]++
	want["is"]++
	want["to"]++
	want["be"] = 1
	waitFor(t, ctx, "the view to count lines sent after it was made", func() bool { return maps.Equal(counts(), want) })

	// The server goes away: the source says it is connecting again.
	srv.close()
	c.Close()
	status := func() string {
		rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := vals[8].(string); ok && strings.HasPrefix(vals[1].(string), "CREATE VIEW wc") {
				out = append(out, s)
			}
		}
		return strings.Join(out, "; ")
	}
	waitFor(t, ctx, "SHOW PROCESSLIST to say the source is connecting", func() bool {
		return strings.Contains(status(), "connecting to socket "+addr)
	})

	// Back on the same port, the server's lines are counted too.
	srv = listenLines(t, addr)
	c = srv.accept(t, ctx)
	send(c, "whether tis nobler\nin the mind") // the last line without a newline, then closed
	c.Close()
	maps.Copy(want, map[string]int64{"whether": 1, "tis": 1, "nobler": 1, "in": 1, "mind": 1})
	want["the"]++
	waitFor(t, ctx, "the view to count the lines of the next connection", func() bool { return maps.Equal(counts(), want) })
	var the int64
	if err := conn.QueryRow(ctx, "SELECT n FROM wc WHERE word = 'the'").Scan(&the); err != nil || the != 3 {
		t.Errorf("the: %d, %v; want 3", the, err)
	}
	exec("DROP VIEW wc")
}

// TestSocketCSVBadRecords: a socket table in format=csv reads each line as a
// record; a line it cannot parse is counted in SHOW PROCESSLIST's bad_records
// and skipped, and the job goes on.
func TestSocketCSVBadRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := listenLines(t, "127.0.0.1:0")
	pg := startTestServer(t)
	conn := connectPgx(t, ctx, pg)
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE orders_in (id BIGINT, item TEXT, qty BIGINT) ENGINE=socket CONNECTION='socket://%s?format=csv'", srv.ln.Addr()),
		"CREATE VIEW per_item AS SELECT item, sum(qty) AS qty, count(*) AS n FROM orders_in GROUP BY item",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c := srv.accept(t, ctx)
	// Two bad lines: a quantity that is not a number, and too few fields.
	if _, err := c.Write([]byte("1,apple,3\n2,pear,many\n3,\"apple\",4\r\n4,plum\n5,pear,\n6,pear,2\n")); err != nil {
		t.Fatal(err)
	}
	rows := func() string {
		r, err := conn.Query(ctx, "SELECT item, qty::text, n FROM per_item ORDER BY item")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for r.Next() {
			vals, err := r.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.TrimSpace(fmt.Sprintln(vals...)))
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "; ")
	}
	// The hand count: apple 3+4 in 2 rows; pear NULL+2 in 2 rows.
	const want = "apple 7 2; pear 2 2"
	var got string
	waitFor(t, ctx, "the view to hold "+want, func() bool {
		if g := rows(); g != got {
			got = g
			t.Logf("the view holds %q", got)
		}
		return got == want
	})
	var bad int64
	waitFor(t, ctx, "SHOW PROCESSLIST to count 2 bad records", func() bool {
		r, err := conn.Query(ctx, "SHOW PROCESSLIST")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			vals, err := r.Values()
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(vals[1].(string), "CREATE VIEW per_item") {
				bad = vals[6].(int64)
			}
		}
		return bad == 2
	})
}

// TestSocketCountDistinct: COUNT(DISTINCT) over a stream, in a view that
// follows it: its counts equal a hand count of the lines sent so far, and
// change as lines with new values come, not with repeated ones.
func TestSocketCountDistinct(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := listenLines(t, "127.0.0.1:0")
	pg := startTestServer(t)
	conn := connectPgx(t, ctx, pg)
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE kv (k TEXT, v TEXT) ENGINE=socket CONNECTION='socket://%s?format=csv'", srv.ln.Addr()),
		"CREATE VIEW dv AS SELECT k, count(DISTINCT v) AS d, count(*) AS n FROM kv GROUP BY k",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	view := func() string {
		rows, err := conn.Query(ctx, "SELECT k, d, n FROM dv ORDER BY k")
		if err != nil {
			return err.Error()
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var k string
			var d, n int64
			if err := rows.Scan(&k, &d, &n); err != nil {
				return err.Error()
			}
			fmt.Fprintf(&b, "%s %d %d;", k, d, n)
		}
		return b.String()
	}
	c := srv.accept(t, ctx)
	if _, err := c.Write([]byte("a,x\na,y\na,x\nb,z\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the view's distinct counts of the first lines", func() bool { return view() == "a 2 3;b 1 1;" })
	if _, err := c.Write([]byte("b,z\nb,w\na,y\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the view's distinct counts after more lines", func() bool { return view() == "a 2 4;b 2 3;" })
}

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Python clients and ODBC against the server as against PostgreSQL 15: each
// script in testdata/clients prints stable text, and its golden file beside
// it is what the same script printed against PostgreSQL 15.18 (CI has no
// PostgreSQL to ask).

// pythonGolden runs script (with the server's address as its argument, in
// the form arg makes of host and port) and compares its output with
// golden.
func pythonGolden(t *testing.T, modules, script, golden string, arg func(host, port string) string) {
	t.Helper()
	py := "/usr/bin/python3"
	out := clientScript(t, []string{py, "-c", "import " + modules}, func(addr string) *exec.Cmd {
		host, port, _ := strings.Cut(addr, ":")
		return exec.Command(py, script, arg(host, port))
	})
	want, err := os.ReadFile("testdata/clients/" + golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("%s printed:\n%s\nwant (PostgreSQL's, %s):\n%s", script, out, golden, want)
	}
}

// TestPsycopgNamedCursor: psycopg 3's server-side cursors (DECLARE "c"
// CURSOR FOR ... with a $1 parameter, then Describe of portal "c", FETCH
// FORWARD n, FETCH FORWARD ALL, CLOSE; WITH HOLD across a COMMIT) and the
// types, sizes, precision and scale cursor.description reports, for a
// named cursor and a client-side one, and the names of subqueries' columns.
func TestPsycopgNamedCursor(t *testing.T) {
	pythonGolden(t, "psycopg", "psycopg_cursor.py", "psycopg_cursor.golden", func(host, port string) string {
		return "host=" + host + " port=" + port + " user=hummer dbname=hummer"
	})
}

// TestPythonTimeZone: psycopg2 and psycopg 3 (text and binary parameters)
// after SET TIME ZONE: timestamptz results in the session's zone (psycopg 3
// reads it from the TimeZone ParameterStatus), timestamptz text parameters
// without a zone read there, AT TIME ZONE, and timedelta parameters in
// interval arithmetic.
func TestPythonTimeZone(t *testing.T) {
	pythonGolden(t, "psycopg, psycopg2", "timezone_clients.py", "timezone_clients.golden", func(host, port string) string {
		return "host=" + host + " port=" + port + " user=hummer dbname=hummer"
	})
}

// TestSQLAlchemyReflection: SQLAlchemy 1.4 (postgresql+psycopg2): connect
// (version(), current_schema(), SHOW ...), the inspector's schemas, tables,
// views, has_table, get_columns (types with precision and scale, NOT NULL,
// defaults, identity), get_pk_constraint, get_foreign_keys, get_indexes,
// get_unique_constraints, get_check_constraints, get_table_comment and
// get_view_definition of a table with a primary key and a view; Table
// autoload of both; select() with LIMIT, OFFSET, LIMIT ALL OFFSET and bound
// values; Core's create_all and drop_all, insert of many rows, update,
// delete and stream_results (a named cursor). The catalog queries it sends are each in testdata/slt/clients.slt
// too, checked there row by row against PostgreSQL's answers.
func TestSQLAlchemyReflection(t *testing.T) {
	pythonGolden(t, "sqlalchemy, psycopg2", "sqlalchemy_reflect.py", "sqlalchemy_reflect.golden", func(host, port string) string {
		return "postgresql+psycopg2://hummer@" + host + ":" + port + "/hummer"
	})
}

// TestODBCIsql: unixODBC's isql through psqlODBC (odbc-postgresql), with an
// odbcinst.ini and odbc.ini of the test's own: psqlODBC's connection
// settings (SET DateStyle, extra_float_digits, SHOW transaction_isolation,
// its lo type query), DROP TABLE IF EXISTS of no table (its NOTICE, which
// isql reports as SQL_SUCCESS_WITH_INFO), statements it prepares (CREATE
// TABLE, INSERT), its SQLTables and SQLColumns catalog queries (isql's
// "help" and "help ot"), and queries whose rows come back through SQLFetch.
// The golden file is what it printed against PostgreSQL 15 (in a database
// holding only ot), with the database's name and the table's oid written
// DB and OID.
func TestODBCIsql(t *testing.T) {
	driver := "/usr/lib/x86_64-linux-gnu/odbc/psqlodbcw.so"
	if _, err := os.Stat(driver); err != nil {
		t.Skipf("%s: %v (install odbc-postgresql to run this test)", driver, err)
	}
	dir := t.TempDir()
	out := clientScript(t, []string{"isql", "--version"}, func(addr string) *exec.Cmd {
		host, port, _ := strings.Cut(addr, ":")
		ini := "[hum]\nDriver=PostgreSQL Unicode\nServername=" + host + "\nPort=" + port + "\nDatabase=hummer\nUsername=hummer\n"
		if err := os.WriteFile(dir+"/odbcinst.ini", []byte("[PostgreSQL Unicode]\nDriver="+driver+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/odbc.ini", []byte(ini), 0o644); err != nil {
			t.Fatal(err)
		}
		script, err := os.Open("testdata/clients/odbc_isql.sql")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { script.Close() })
		c := exec.Command("isql", "-b", "-v", "-d|", "hum")
		c.Stdin = script
		c.Env = append(os.Environ(), "ODBCSYSINI="+dir, "ODBCINI="+dir+"/odbc.ini")
		return c
	})
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		switch f := strings.Split(l, "|"); len(f) {
		case 26: // a row of SQLColumns
			f[0], f[22] = "DB", "OID"
			lines[i] = strings.Join(f, "|")
		case 5: // of SQLTables
			f[0] = "DB"
			lines[i] = strings.Join(f, "|")
		}
	}
	want, err := os.ReadFile("testdata/clients/odbc_isql.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != string(want) {
		t.Errorf("isql printed:\n%s\nwant (PostgreSQL's):\n%s", got, want)
	}
}

// TestPgcli: pgcli, run by tmux as a person would (keys sent, the screen
// read, each wait on what the screen shows, with a deadline), with its
// config and history in a HOME of the test's own. It connects, refreshes
// its completions in the background (schemas, tables, views, their columns,
// foreign keys, functions, types, databases: catalog queries clients.slt
// checks too) without a traceback, and its \dt, \dv, a query, \d orders
// (pgspecial's queries: columns with substring(... for 128), indexes), \dn
// and \df (none: 'pg_catalog.trigger'::pg_catalog.regtype) print what
// they print against PostgreSQL 15 (pgcli.golden), but the prompt, the
// timings and the owner's name (postgres there, hummer here).
func TestPgcli(t *testing.T) {
	for _, bin := range []string{"pgcli", "tmux"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s: %v (install pgcli and tmux to run this test)", bin, err)
		}
	}
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	for _, q := range []string{
		"CREATE TABLE orders (id BIGINT PRIMARY KEY, item TEXT NOT NULL, qty BIGINT, at DATE)",
		"CREATE TABLE customers (id BIGINT PRIMARY KEY, name TEXT)",
		"CREATE VIEW big_orders AS SELECT id, item FROM orders WHERE qty > 10",
		"INSERT INTO orders VALUES (1, 'pen', 12, '2024-01-02'), (2, 'ink', 3, NULL), (3, 'pad', 20, '2024-03-04')",
		"INSERT INTO customers VALUES (1, 'ann')",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close(ctx)
	host, port, _ := strings.Cut(addr, ":")
	sock := filepath.Join(t.TempDir(), "tmux")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	pgcli := "env HOME=" + t.TempDir() + " pgcli -h " + host + " -p " + port + " -U hummer hummer"
	if out, err := tmux("new-session", "-d", "-s", "pgcli", "-x", "160", "-y", "80", pgcli); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	screen := func() string {
		out, _ := tmux("capture-pane", "-p", "-t", "pgcli")
		return out
	}
	waitScreen := func(what string, ok func(string) bool) string {
		t.Helper()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			s := screen()
			if ok(s) {
				return s
			}
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for %s; the terminal shows:\n%s", what, s)
			case <-tick.C:
			}
		}
	}
	waitScreen("pgcli's prompt", func(s string) bool { return strings.Contains(s, "hummer>") })
	for i, keys := range []string{`\dt`, `\dv`, "SELECT o.id, o.item, o.qty, o.at FROM orders o WHERE o.qty > 5 ORDER BY o.id",
		`\d orders`, `\dn`, `\df`} {
		if out, err := tmux("send-keys", "-t", "pgcli", "-l", keys); err != nil {
			t.Fatalf("tmux send-keys: %v\n%s", err, out)
		}
		tmux("send-keys", "-t", "pgcli", "Enter")
		waitScreen(keys+"'s answer", func(s string) bool { return strings.Count(s, "\nTime: ") == i+1 })
	}
	s := waitScreen("the end of pgcli's completion refresh", func(s string) bool {
		return !strings.Contains(s, "Refreshing completions")
	})
	if strings.Contains(s, "Traceback") || strings.Contains(s, "Exception") {
		t.Fatalf("pgcli printed a traceback:\n%s", s)
	}
	want, err := os.ReadFile("testdata/clients/pgcli.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got, w := normalizePgcli(s), normalizePgcli(string(want)); got != w {
		t.Errorf("pgcli showed:\n%s\nwant (PostgreSQL's, pgcli.golden):\n%s\nnormalised:\n%s\nwant:\n%s", s, want, got, w)
	}
}

// normalizePgcli keeps what pgcli shows from its \dt on, without what
// differs from server to server by design: the prompt (user@host:db), the
// timings, the owner's name and so the tables' widths (cells are trimmed).
func normalizePgcli(screen string) string {
	lines := strings.Split(screen, "\n")
	var out []string
	started := false
	for _, l := range lines {
		l = strings.TrimRight(l, " ")
		if i := strings.Index(l, "> "); i >= 0 && strings.Contains(l[:i], "@") {
			l = "> " + l[i+2:]
		} else if strings.HasSuffix(l, ">") && strings.Contains(l, "@") {
			l = ">"
		}
		if l == `> \dt` {
			started = true
		}
		if !started || l == "" || strings.HasPrefix(l, "Time: ") || strings.HasPrefix(l, " [F2]") {
			continue
		}
		if strings.HasPrefix(l, "|") || strings.HasPrefix(l, "+") {
			cells := strings.FieldsFunc(l, func(r rune) bool { return r == '|' || r == '+' })
			for i, c := range cells {
				c = strings.TrimSpace(c)
				if strings.Trim(c, "-") == "" {
					c = "-"
				}
				if c == "postgres" || c == "hummer" {
					c = "OWNER"
				}
				cells[i] = c
			}
			l = "|" + strings.Join(cells, "|") + "|"
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestPsycopg2ScrollCursor: psycopg2's scrollable named cursor (DECLARE ...
// SCROLL CURSOR, MOVE BACKWARD, MOVE ABSOLUTE) over a bounded query.
func TestPsycopg2ScrollCursor(t *testing.T) {
	pythonGolden(t, "psycopg2", "psycopg2_scroll.py", "psycopg2_scroll.golden", func(host, port string) string {
		return "host=" + host + " port=" + port + " user=hummer dbname=hummer"
	})
}

// TestPsycopg2Copy: psycopg2's copy_from (text format, a column list, another
// separator) and copy_expert (COPY ... FROM STDIN WITH (FORMAT csv, HEADER))
// into a stored table: their row counts, the rows, and a bad row refused
// with its SQLSTATE and line, nothing of its COPY kept.
func TestPsycopg2Copy(t *testing.T) {
	pythonGolden(t, "psycopg2", "psycopg2_copy.py", "psycopg2_copy.golden", func(host, port string) string {
		return "host=" + host + " port=" + port + " user=hummer dbname=hummer"
	})
}

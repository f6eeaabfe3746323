package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
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
// named cursor and a client-side one.
func TestPsycopgNamedCursor(t *testing.T) {
	pythonGolden(t, "psycopg", "psycopg_cursor.py", "psycopg_cursor.golden", func(host, port string) string {
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
// values. The catalog queries it sends are each in testdata/slt/clients.slt
// too, checked there row by row against PostgreSQL's answers.
func TestSQLAlchemyReflection(t *testing.T) {
	pythonGolden(t, "sqlalchemy, psycopg2", "sqlalchemy_reflect.py", "sqlalchemy_reflect.golden", func(host, port string) string {
		return "postgresql+psycopg2://hummer@" + host + ":" + port + "/hummer"
	})
}

// TestODBCIsql: unixODBC's isql through psqlODBC (odbc-postgresql), with an
// odbcinst.ini and odbc.ini of the test's own: psqlODBC's connection
// settings (SET DateStyle, extra_float_digits, SHOW transaction_isolation,
// its lo type query), statements it prepares (CREATE TABLE, INSERT), its
// SQLColumns catalog query (isql's "help ot"), and queries whose rows come
// back through SQLFetch. The golden file is what it printed against
// PostgreSQL 15, with the database's name and the table's oid in
// SQLColumns' rows written DB and OID.
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
		if f := strings.Split(l, "|"); len(f) == 26 { // a row of SQLColumns
			f[0], f[22] = "DB", "OID"
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

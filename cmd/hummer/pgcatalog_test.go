package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// psqlDescribeSetup is the DDL both servers were given: Hummer here, and
// PostgreSQL 15 (a database hummer owned by a superuser hummer), whose
// psql output psqlDescribeWant holds.
//
// A DEFAULT shows as PostgreSQL keeps it, as written; Hummer keeps the value,
// so 1.5 would show as 1.50: the DDL writes it so.
const psqlDescribeSetup = `CREATE TABLE t1 (a BIGINT PRIMARY KEY, b TEXT NOT NULL, c DECIMAL(10,2) DEFAULT 1.50);
CREATE VIEW v1 AS SELECT a FROM t1;`

// psqlDescribeWant is what psql 15 printed for each command against
// PostgreSQL 15 holding docs (a table of one text column), t1 and v1. Where
// Hummer must differ it is said: \du lists Hummer's one role, the engine's
// bootstrap superuser, whose attributes PostgreSQL's bootstrap superuser
// (postgres) has; \l lists Hummer's one database, as \l printed for a
// database hummer created with LC_COLLATE 'C' LC_CTYPE 'C' (Hummer compares
// text by bytes), without PostgreSQL's postgres and template databases.
var psqlDescribeWant = map[string]string{
	`\d`: `       List of relations
 Schema | Name | Type  | Owner  
--------+------+-------+--------
 public | docs | table | hummer
 public | t1   | table | hummer
 public | v1   | view  | hummer
(3 rows)
`,
	`\dt`: `       List of relations
 Schema | Name | Type  | Owner  
--------+------+-------+--------
 public | docs | table | hummer
 public | t1   | table | hummer
(2 rows)
`,
	`\dv`: `       List of relations
 Schema | Name | Type | Owner  
--------+------+------+--------
 public | v1   | view | hummer
(1 row)
`,
	`\dn`: `      List of schemas
  Name  |       Owner       
--------+-------------------
 public | pg_database_owner
(1 row)
`,
	`\df`: `                       List of functions
 Schema | Name | Result data type | Argument data types | Type 
--------+------+------------------+---------------------+------
(0 rows)
`,
	`\df+`: `                                                                          List of functions
 Schema | Name | Result data type | Argument data types | Type | Volatility | Parallel | Owner | Security | Access privileges | Language | Source code | Description 
--------+------+------------------+---------------------+------+------------+----------+-------+----------+-------------------+----------+-------------+-------------
(0 rows)
`,
	`\dconfig *encoding`: `List of configuration parameters
    Parameter    | Value 
-----------------+-------
 client_encoding | UTF8
 server_encoding | UTF8
(2 rows)
`,
	`\dT`: `     List of data types
 Schema | Name | Description 
--------+------+-------------
(0 rows)
`,
	`\d t1`: `                    Table "public.t1"
 Column |     Type      | Collation | Nullable | Default 
--------+---------------+-----------+----------+---------
 a      | bigint        |           | not null | 
 b      | text          |           | not null | 
 c      | numeric(10,2) |           |          | 1.50
Indexes:
    "t1_pkey" PRIMARY KEY, btree (a)
`,
	`\d+ t1`: `                                               Table "public.t1"
 Column |     Type      | Collation | Nullable | Default | Storage  | Compression | Stats target | Description 
--------+---------------+-----------+----------+---------+----------+-------------+--------------+-------------
 a      | bigint        |           | not null |         | plain    |             |              | 
 b      | text          |           | not null |         | extended |             |              | 
 c      | numeric(10,2) |           |          | 1.50    | main     |             |              | 
Indexes:
    "t1_pkey" PRIMARY KEY, btree (a)
Access method: heap
`,
	`\d v1`: `                 View "public.v1"
 Column |  Type  | Collation | Nullable | Default 
--------+--------+-----------+----------+---------
 a      | bigint |           |          | 
`,
	`\d docs`: `              Table "public.docs"
 Column | Type | Collation | Nullable | Default 
--------+------+-----------+----------+---------
 line   | text |           |          | 
`,
	`\l`: `                                        List of databases
  Name  | Owner  | Encoding | Collate | Ctype | ICU Locale | Locale Provider | Access privileges 
--------+--------+----------+---------+-------+------------+-----------------+-------------------
 hummer | hummer | UTF8     | C       | C     |            | libc            | 
(1 row)
`,
	`\du`: `                                   List of roles
 Role name |                         Attributes                         | Member of 
-----------+------------------------------------------------------------+-----------
 hummer    | Superuser, Create role, Create DB, Replication, Bypass RLS | {}
`,
}

// TestPsqlDescribe runs psql's describe commands, whose queries read
// pg_catalog through the engine's query path, and compares what psql prints
// with what it printed against PostgreSQL.
func TestPsqlDescribe(t *testing.T) {
	addr := startTestServer(t)
	docs := filepath.Join(t.TempDir(), "docs.txt")
	if err := os.WriteFile(docs, []byte("in the beginning\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	psql(t, addr, "CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://"+docs+"';\n"+psqlDescribeSetup)
	host, port, _ := net.SplitHostPort(addr)
	for cmd, want := range psqlDescribeWant {
		out, err := exec.Command("psql", "-X", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-c", cmd).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", cmd, err, out)
			continue
		}
		if got := strings.TrimRight(string(out), "\n") + "\n"; got != want {
			t.Errorf("%s printed:\n%s\nPostgreSQL's psql printed:\n%s", cmd, got, want)
		}
	}
	// information_schema, as drivers and ORMs list tables and columns.
	got := psql(t, addr, `SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1;
SELECT column_name, data_type, is_nullable, column_default, numeric_precision, numeric_scale FROM information_schema.columns WHERE table_name = 't1' ORDER BY ordinal_position;`)
	// PostgreSQL's answers for the same tables (information_schema's
	// numeric_precision for bigint is 64, binary).
	want := `docs|BASE TABLE
t1|BASE TABLE
v1|VIEW
a|bigint|NO||64|0
b|text|NO|||
c|numeric|YES|1.50|10|2
`
	if got != want {
		t.Errorf("information_schema:\n%s\nwant (PostgreSQL's):\n%s", got, want)
	}
}

// TestPsqlTabCompletion types a table's first letters and a tab into a real
// psql in a terminal (tmux) and waits for psql to complete the name, which
// it looks up in pg_class.
func TestPsqlTabCompletion(t *testing.T) {
	addr := startTestServer(t)
	psql(t, addr, "CREATE TABLE fruit_prices (name TEXT, price BIGINT);")
	host, port, _ := net.SplitHostPort(addr)
	send, waitFor := tmuxPsql(t, nil, "-h", host, "-p", port, "-U", "hummer", "-d", "hummer")
	waitFor("psql's prompt", func(s string) bool { return strings.Contains(s, "hummer=#") })
	send("SELECT * FROM fruit_p", "Tab")
	waitFor("the completed name", func(s string) bool { return strings.Contains(s, "SELECT * FROM fruit_prices") })
}

// tmuxPsql starts psql in a terminal (tmux) with env and returns a function
// sending keys and one waiting until the screen shows what ok looks for.
func tmuxPsql(t *testing.T, env []string, args ...string) (send func(keys ...string), waitFor func(what string, ok func(string) bool)) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	name := "hummer-psql-" + strings.ReplaceAll(t.Name(), "/", "-")
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	cmd := strings.Join(env, " ") + " psql -X " + strings.Join(args, " ")
	tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "30", cmd)
	t.Cleanup(func() { exec.Command("tmux", "kill-session", "-t", name).Run() })
	send = func(keys ...string) { tmux(append([]string{"send-keys", "-t", name}, keys...)...) }
	waitFor = func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			screen := tmux("capture-pane", "-t", name, "-p")
			if ok(screen) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s; the terminal shows:\n%s", what, screen)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return send, waitFor
}

// TestPsqlPassword changes the superuser's password with psql's \password,
// which hashes it on the client (SHOW password_encryption, then ALTER USER
// ... PASSWORD 'SCRAM-SHA-256$...'), and logs in with it over SCRAM.
func TestPsqlPassword(t *testing.T) {
	bin := buildHummer(t)
	addr := freeAddr(t)
	exited := startProcess(t, bin, "serve", "--pg-addr", addr, "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--auth", "scram-sha-256", "--superuser-password", "first")
	host, port, _ := net.SplitHostPort(addr)
	login := func(password string) error {
		cmd := exec.Command("psql", "-X", "-w", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-c", "SELECT 1")
		cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	waitUntil(t, "the server", exited, func() bool { return login("first") == nil })
	send, waitFor := tmuxPsql(t, []string{"PGPASSWORD=first"}, "-h", host, "-p", port, "-U", "hummer", "-d", "hummer")
	waitFor("psql's prompt", func(s string) bool { return strings.Contains(s, "hummer=#") })
	send(`\password`, "Enter")
	waitFor("the first password prompt", func(s string) bool { return strings.Contains(s, "Enter new password") })
	send("second", "Enter")
	waitFor("the second password prompt", func(s string) bool { return strings.Contains(s, "Enter it again") })
	send("second", "Enter")
	waitFor("the prompt again", func(s string) bool { return strings.Count(s, "hummer=#") == 2 })
	if err := login("second"); err != nil {
		t.Errorf("the new password: %v", err)
	}
	if err := login("first"); err == nil {
		t.Errorf("the old password still logs in")
	}
}

// TestPsqlExpanded: \x prints each row as a record, as against PostgreSQL.
func TestPsqlExpanded(t *testing.T) {
	addr := startTestServer(t)
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("psql", "-X", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer",
		"-c", `\x`, "-c", "SELECT 1 AS a, 'two' AS b UNION ALL SELECT 3, 'four' ORDER BY 1").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// PostgreSQL 15's psql, for the same query.
	want := `Expanded display is on.
-[ RECORD 1 ]
a | 1
b | two
-[ RECORD 2 ]
a | 3
b | four

`
	if string(out) != want {
		t.Errorf("psql printed:\n%s\nwant:\n%s", out, want)
	}
}

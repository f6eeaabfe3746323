package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
	"github.com/hummer-db/hummer/wire/scram"
)

func openAuthEngine(t *testing.T) *session.Engine {
	t.Helper()
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	reg := exec.NewRegistry()
	operators.Register(reg)
	tables := connectors.Register(reg)
	e, err := session.Open(session.Config{DataDir: t.TempDir(), Registry: reg, Validate: connectors.Validate, Slots: 2, Alloc: mem,
		OnClose: tables.Close})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		mem.AssertSize(t, 0)
	})
	return e
}

// run executes query and returns its rows as "a|b" lines (or its tag).
func run(s *session.Session, query string) (string, error) {
	ctx := context.Background()
	var out []string
	err := s.Exec(ctx, query, func(r *session.Result) error {
		if r.Rows == nil {
			out = append(out, r.Tag)
			return nil
		}
		for {
			b, err := r.Rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			for i := 0; i < int(b.NumRows()); i++ {
				var row []string
				for j := 0; j < int(b.NumCols()); j++ {
					row = append(row, expr.FormatValue(expr.ValueOf(b.Column(j), i)))
				}
				out = append(out, strings.Join(row, "|"))
			}
			b.Release()
		}
	})
	return strings.Join(out, "\n"), err
}

func mustRun(t *testing.T, s *session.Session, query string) string {
	t.Helper()
	out, err := run(s, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

func wantDenied(t *testing.T, s *session.Session, query string) {
	t.Helper()
	_, err := run(s, query)
	if !errors.Is(err, sql.ErrInsufficientPrivilege) {
		t.Errorf("%s: got %v, want insufficient privilege", query, err)
	}
}

func TestPrivileges(t *testing.T) {
	e := openAuthEngine(t)
	dir := t.TempDir()
	csv := filepath.Join(dir, "t.csv")
	os.WriteFile(csv, []byte("1\n2\n3\n"), 0o644)

	if has, err := e.BootstrapSuperuser("root pw"); err != nil || !has {
		t.Fatalf("bootstrap: %v %v", has, err)
	}
	root := e.NewUserSession("hummer")
	mustRun(t, root, fmt.Sprintf("CREATE TABLE t (a BIGINT) ENGINE=file CONNECTION='file://%s?format=csv'", csv))
	mustRun(t, root, fmt.Sprintf("CREATE TABLE secret (a BIGINT) ENGINE=file CONNECTION='file://%s?format=csv'", csv))
	mustRun(t, root, "CREATE USER ann IDENTIFIED BY 'ann pw', bob")
	if _, err := run(root, "CREATE USER Ann"); !errors.Is(err, sql.ErrDuplicateUser) {
		t.Errorf("duplicate user: %v", err)
	}

	ann := e.NewUserSession("ann")
	wantDenied(t, ann, "SELECT a FROM t")
	wantDenied(t, ann, "DROP TABLE t")
	wantDenied(t, ann, "CREATE TABLE mine (a BIGINT) ENGINE=memory CONNECTION='memory://mine'")
	wantDenied(t, ann, "CREATE USER eve")
	wantDenied(t, ann, "GRANT SELECT ON t TO ann")
	wantDenied(t, ann, "KILL 1")
	wantDenied(t, ann, "ALTER USER bob IDENTIFIED BY 'x'")
	if out := mustRun(t, ann, "SET parallelism = 1; SHOW parallelism"); out != "SET\n'1'" {
		t.Errorf("SET/SHOW: %q", out)
	}

	mustRun(t, root, "GRANT SELECT ON t TO ann")
	if out := mustRun(t, ann, "SELECT a FROM t ORDER BY a"); out != "1\n2\n3" {
		t.Errorf("granted SELECT: %q", out)
	}
	wantDenied(t, ann, "SELECT t.a FROM t JOIN secret s ON t.a = s.a")
	wantDenied(t, ann, "EXPLAIN SELECT a FROM secret")
	for _, stmt := range []string{"COPY (SELECT a FROM secret) TO STDOUT", "COPY secret TO STDOUT", "COPY secret (a) TO STDOUT WITH (FORMAT csv)"} {
		if _, err := ann.CopyOut(context.Background(), stmt); !errors.Is(err, sql.ErrInsufficientPrivilege) {
			t.Errorf("%s: %v", stmt, err)
		}
	}
	// Prepared statements are checked when they run.
	p, err := ann.Prepare(context.Background(), "SELECT a FROM secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), nil); !errors.Is(err, sql.ErrInsufficientPrivilege) {
		t.Errorf("prepared SELECT of secret: %v", err)
	}

	// CREATE makes the creator the owner: it reads, writes and drops its table.
	mustRun(t, root, "GRANT CREATE ON * TO ann")
	mustRun(t, ann, "CREATE TABLE mine (a BIGINT) ENGINE=memory CONNECTION='memory://mine'")
	mustRun(t, ann, "INSERT INTO mine SELECT a FROM t")
	wantDenied(t, ann, "INSERT INTO t SELECT a FROM mine")
	wantDenied(t, ann, "DROP TABLE t")
	if out := mustRun(t, ann, "SHOW GRANTS"); out != "'GRANT CREATE ON *.* TO ann'\n'GRANT SELECT, INSERT, DROP ON mine TO ann'\n'GRANT SELECT ON t TO ann'" {
		t.Errorf("SHOW GRANTS:\n%s", out)
	}
	mustRun(t, ann, "DROP TABLE mine")

	// A view is read with SELECT on the view alone, as in PostgreSQL (its
	// owner's rights reach the tables under it).
	mustRun(t, root, "CREATE VIEW v AS SELECT a FROM secret")
	wantDenied(t, ann, "SELECT a FROM v")
	mustRun(t, root, "GRANT SELECT ON v TO ann")
	waitRows(t, ann, "SELECT count(*) FROM v", "3")
	wantDenied(t, ann, "CREATE VIEW w AS SELECT a FROM secret")
	mustRun(t, ann, "CREATE VIEW w AS SELECT a FROM t")
	mustRun(t, ann, "DROP VIEW w")

	mustRun(t, root, "REVOKE SELECT ON t FROM ann")
	wantDenied(t, ann, "SELECT a FROM t")
	mustRun(t, root, "GRANT ALL ON *.* TO bob")
	bob := e.NewUserSession("bob")
	if out := mustRun(t, bob, "SELECT count(*) FROM secret"); out != "3" {
		t.Errorf("bob: %q", out)
	}

	// Passwords: only verifiers are kept; users change their own.
	u, _ := e.User("ann")
	v, err := scram.ParseVerifier(u.Verifier)
	if err != nil || !v.CheckPassword("ann pw") || strings.Contains(u.Verifier, "ann pw") {
		t.Fatalf("ann's verifier %q: %v", u.Verifier, err)
	}
	mustRun(t, ann, "ALTER USER ann IDENTIFIED BY 'new pw'")
	u, _ = e.User("ann")
	if v, _ := scram.ParseVerifier(u.Verifier); !v.CheckPassword("new pw") {
		t.Error("ALTER USER did not change the password")
	}
	if b, _ := e.User("bob"); b.Verifier != "" {
		t.Errorf("bob has a verifier without a password: %q", b.Verifier)
	}

	if _, err := run(root, "DROP USER hummer"); !errors.Is(err, sql.ErrInvalidValue) {
		t.Errorf("DROP USER hummer: %v", err)
	}
	mustRun(t, root, "DROP USER ann")
	wantDenied(t, ann, "SELECT 1")
	if _, err := run(root, "DROP USER ann"); !errors.Is(err, sql.ErrUnknownUser) {
		t.Errorf("DROP USER twice: %v", err)
	}

	// The bootstrap password is kept across restarts, and replaced when given.
	if has, err := e.BootstrapSuperuser(""); err != nil || !has {
		t.Errorf("bootstrap without password: %v %v", has, err)
	}
	r, _ := e.User("hummer")
	if has, _ := e.BootstrapSuperuser("root pw"); !has {
		t.Error("no password")
	}
	if r2, _ := e.User("hummer"); r2.Verifier != r.Verifier {
		t.Error("the same bootstrap password changed the stored verifier")
	}
}

// waitRows runs query until it returns want (a view fills as its job runs).
func waitRows(t *testing.T, s *session.Session, query, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := mustRun(t, s, query)
		if out == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q, want %q", query, out, want)
		}
		time.Sleep(10 * time.Millisecond) // polling interval while the view's job runs
	}
}

func TestStatementTimeout(t *testing.T) {
	e := openAuthEngine(t)
	dir := t.TempDir()
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "%d\n", i)
	}
	csv := filepath.Join(dir, "n.csv")
	os.WriteFile(csv, []byte(b.String()), 0o644)
	s := e.NewSession()
	mustRun(t, s, fmt.Sprintf("CREATE TABLE n (a BIGINT) ENGINE=file CONNECTION='file://%s?format=csv'", csv))

	for _, bad := range []string{"'abc'", "'5 parsecs'", "'-1s'"} {
		if _, err := run(s, "SET statement_timeout = "+bad); !errors.Is(err, sql.ErrInvalidValue) {
			t.Errorf("SET statement_timeout = %s: %v", bad, err)
		}
	}
	mustRun(t, s, "SET statement_timeout = '200ms'")
	start := time.Now()
	// 400 million joined rows: far longer than the timeout.
	_, err := run(s, "SELECT count(*) FROM (SELECT a, 0 AS k FROM n) x JOIN (SELECT a, 0 AS k FROM n) y ON x.k = y.k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow query: %v, want a deadline", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the timeout took %v to stop the query", d)
	}
	if out := mustRun(t, s, "SELECT count(*) FROM n"); out != "20000" {
		t.Errorf("fast query under the timeout: %q", out)
	}
	mustRun(t, s, "SET statement_timeout = 0")
	if out := mustRun(t, s, "SHOW statement_timeout"); out != "'0'" {
		t.Errorf("SHOW statement_timeout: %q", out)
	}
	for _, ok := range []string{"'1min'", "'1.5 s'", "'250'", "2000", "'1m30s'", "DEFAULT"} {
		mustRun(t, s, "SET statement_timeout = "+ok)
	}
}

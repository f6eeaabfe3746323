package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestHostileExpressions: statements a user can type that once cost the
// server: a WHERE of 70,000 ORs (planned as one IN list, and quickly), an OR
// of 5,000 terms that no IN list takes (XX000 "exceeded max depth" before),
// and nesting past the depth limit, refused with PostgreSQL's 54001. The
// server serves on after each.
// hostileTerms is the length of the long OR chain.
var hostileTerms = 70000

func TestHostileExpressions(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	data, _ := filepath.Abs("testdata")
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE emp (id BIGINT, name TEXT, dept_id BIGINT, salary DECIMAL(10,2), hired DATETIME, active BOOLEAN) ENGINE=file CONNECTION='file://%s/emp.csv?format=csv&header=true'", data)); err != nil {
		t.Fatal(err)
	}
	count := func(where string) (int64, error) {
		var n int64
		err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM emp WHERE "+where).Scan(&n)
		return n, err
	}
	// ids 1..8, every one of them among 0..69999; and by hand: 1, Bob (2), 3.
	terms := make([]string, hostileTerms)
	for i := range terms {
		terms[i] = fmt.Sprintf("id = %d", i)
	}
	for _, c := range []struct {
		where string
		want  int64
	}{
		{strings.Join(terms, " OR "), 8},
		{"id = 1 OR name = 'Bob' OR id = 3", 3},
		{"(id = 1 OR (id = 4)) OR id = 7 OR id = 70", 3},
		{"id = 1 OR id = NULL OR id = 5", 2},
	} {
		start := time.Now()
		n, err := count(c.where)
		if err != nil || n != c.want {
			t.Errorf("COUNT(*) WHERE %.60s...: %d, %v; want %d", c.where, n, err, c.want)
		}
		t.Logf("%.40s... (%d bytes): %s", c.where, len(c.where), time.Since(start))
	}
	// 5,000 terms no IN list takes, then one that holds for Bob.
	wide := make([]string, 5000)
	for i := range wide {
		wide[i] = fmt.Sprintf("id > %d", 100000+i)
	}
	if n, err := count(strings.Join(wide, " OR ") + " OR id = 2"); err != nil || n != 1 {
		t.Errorf("an OR of 5,001 comparisons: %d, %v; want 1", n, err)
	}
	// AND chains flatten too.
	and := make([]string, 20000)
	for i := range and {
		and[i] = fmt.Sprintf("id <> %d", 100+i)
	}
	if n, err := count(strings.Join(and, " AND ")); err != nil || n != 8 {
		t.Errorf("an AND of 20,000 comparisons: %d, %v; want 8", n, err)
	}
	// Nesting that does not flatten: refused, 54001, pointing at the text.
	for _, q := range []string{
		"SELECT " + strings.Repeat("1 + ", 2000) + "1",
		"SELECT " + strings.Repeat("(", 2000) + "1" + strings.Repeat(")", 2000),
		"SELECT COUNT(*) FROM emp WHERE " + strings.Repeat("NOT ", 2000) + "active",
	} {
		_, err := conn.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "54001" || !strings.Contains(pe.Message, "stack depth limit exceeded") {
			t.Errorf("%.30s...: %v, want 54001 stack depth limit exceeded", q, err)
		}
	}
	var one int64
	if err := conn.QueryRow(ctx, "SELECT "+strings.Repeat("1 + ", 500)+"1").Scan(&one); err != nil || one != 501 {
		t.Errorf("500 additions: %d, %v; want 501", one, err)
	}
}

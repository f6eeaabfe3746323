package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/lib/pq"
)

// Go's database/sql drivers for PostgreSQL, lib/pq and pgx's stdlib, against
// Hummer: queries with $n parameters of several types, LIMIT $1 OFFSET $2,
// transactions with database/sql's BeginTx, COPY FROM STDIN through
// pq.CopyIn, and errors as each driver's error type with the SQLSTATE. The
// expected values are PostgreSQL's for the same statements: set
// HUMMER_SQLDRIVER_PG to a PostgreSQL URL (e.g.
// postgres://postgres@/h_node?host=/tmp&port=5433&sslmode=disable) to run the
// same checks against it.

// sqlDriverErr is what a driver's error says: SQLSTATE, message, position.
type sqlDriverErr struct{ code, msg, pos string }

// TestLibPq runs the database/sql checks through lib/pq.
func TestLibPq(t *testing.T) {
	db := openSQLDriver(t, "postgres")
	checkSQLDriver(t, db, "libpq", func(err error) (sqlDriverErr, bool) {
		var pe *pq.Error
		if !errors.As(err, &pe) {
			return sqlDriverErr{}, false
		}
		return sqlDriverErr{string(pe.Code), pe.Message, pe.Position}, true
	})
	copyInLibPq(t, db)
}

// TestPgxStdlib runs the database/sql checks through pgx's stdlib driver,
// which sends every query with parameters through the extended protocol,
// its statements prepared and cached by name.
func TestPgxStdlib(t *testing.T) {
	db := openSQLDriver(t, "pgx")
	checkSQLDriver(t, db, "pgxstd", func(err error) (sqlDriverErr, bool) {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			return sqlDriverErr{}, false
		}
		pos := ""
		if pe.Position != 0 {
			pos = fmt.Sprint(pe.Position)
		}
		return sqlDriverErr{pe.Code, pe.Message, pos}, true
	})
}

// openSQLDriver opens driver on a fresh Hummer (or HUMMER_SQLDRIVER_PG),
// one connection at a time so that session state carries from statement to
// statement.
func openSQLDriver(t *testing.T, driver string) *sql.DB {
	t.Helper()
	dsn := os.Getenv("HUMMER_SQLDRIVER_PG")
	if dsn == "" {
		dsn = "postgres://hummer@" + startTestServer(t) + "/hummer?sslmode=disable"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// checkSQLDriver runs the checks common to both drivers on tables whose
// names start with prefix; pgErr reads the driver's error type.
func checkSQLDriver(t *testing.T, db *sql.DB, prefix string, pgErr func(error) (sqlDriverErr, bool)) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	items := prefix + "_items"
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	exec("DROP TABLE IF EXISTS " + items)
	exec("CREATE TABLE " + items + " (id BIGINT PRIMARY KEY, name TEXT, price DOUBLE PRECISION, qty NUMERIC(10,2), ok BOOLEAN, at TIMESTAMP)")
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + items) })

	// INSERT with a parameter of each type, NULL among them.
	at := time.Date(2024, 3, 1, 12, 30, 0, 0, time.UTC)
	rows := []struct {
		id    int64
		name  any
		price float64
		qty   string
		ok    bool
		at    time.Time
	}{
		{1, "apple", 0.5, "3.00", true, at},
		{2, "pear", 1.25, "10.50", false, at.Add(time.Hour)},
		{3, nil, 2.75, "0.25", true, at.Add(24 * time.Hour)},
		{4, "plum", 4, "7.00", true, at.Add(48 * time.Hour)},
		{5, "fig", 8.5, "1.00", false, at.Add(72 * time.Hour)},
	}
	for _, r := range rows {
		exec("INSERT INTO "+items+" (id, name, price, qty, ok, at) VALUES ($1, $2, $3, $4, $5, $6)", r.id, r.name, r.price, r.qty, r.ok, r.at)
	}

	// query returns the rows of a query as text, a row a line, columns by |.
	query := func(q string, args ...any) string {
		t.Helper()
		rs, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rs.Close()
		cols, _ := rs.Columns()
		var lines []string
		for rs.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			var f []string
			for _, v := range vals {
				if v.Valid {
					f = append(f, v.String)
				} else {
					f = append(f, "NULL")
				}
			}
			lines = append(lines, strings.Join(f, "|"))
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return strings.Join(lines, "\n")
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", what, got, want)
		}
	}

	// Parameters of several types in one WHERE: price > 1 (float), ok (bool),
	// at before the 4th (timestamp), qty >= 0.25 (numeric text).
	check("typed parameters", query("SELECT id, coalesce(name, '-') FROM "+items+" WHERE price > $1 AND ok = $2 AND at < $3 AND qty >= $4 ORDER BY id",
		1.0, true, at.Add(60*time.Hour), "0.25"), "3|-\n4|plum")
	check("text parameter with LIKE", query("SELECT id FROM "+items+" WHERE name LIKE $1 ORDER BY id", "p%"), "2\n4")
	check("NULL parameter", query("SELECT count(*) FROM "+items+" WHERE name = $1", nil), "0")
	// Scanned into Go types: int64, string, float64, bool, time.Time.
	{
		var (
			id    int64
			name  string
			price float64
			ok    bool
			ts    time.Time
		)
		err := db.QueryRowContext(ctx, "SELECT id, name, price, ok, at FROM "+items+" WHERE id = $1", int64(2)).Scan(&id, &name, &price, &ok, &ts)
		if err != nil {
			t.Fatal(err)
		}
		if id != 2 || name != "pear" || price != 1.25 || ok || !ts.Equal(at.Add(time.Hour)) {
			t.Errorf("row 2 scanned as %d %q %v %v %v", id, name, price, ok, ts)
		}
	}
	// Values round-tripped through parameters and casts.
	check("parameters echoed", query("SELECT $1::bigint + 1, $2::text || '!', $3::double precision * 2, $4::boolean, $5::numeric(6,2)",
		int64(41), "hi", 1.5, false, "2.5"), "42|hi!|3|false|2.50")

	// Pages of two rows: LIMIT $1 OFFSET $2.
	for off, want := range []string{"1\n2", "3\n4", "5", ""} {
		check(fmt.Sprintf("page at offset %d", off*2), query("SELECT id FROM "+items+" ORDER BY id LIMIT $1 OFFSET $2", 2, off*2), want)
	}

	// A transaction block: its writes are there after Commit.
	{
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+items+" (id, name) VALUES ($1, $2)", 6, "kiwi"); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+items).Scan(&n); err != nil || n != 6 {
			t.Errorf("count in the block: %d, %v; want 6", n, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		check("after Commit", query("SELECT count(*) FROM "+items), "6")
	}
	// Rollback undoes the block's SET (Hummer commits writes as they run:
	// session/tx.go; so the block here only reads and sets).
	{
		exec("SET application_name = 'before'")
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "SET application_name = 'inside'"); err != nil {
			t.Fatal(err)
		}
		var name string
		if err := tx.QueryRowContext(ctx, "SELECT current_setting('application_name')").Scan(&name); err != nil || name != "inside" {
			t.Errorf("application_name in the block: %q, %v", name, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		check("application_name after Rollback", query("SELECT current_setting('application_name')"), "before")
	}
	// A failed statement fails the block (25P02 after it) until Rollback.
	{
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, "SELECT 1/0")
		if e, ok := pgErr(err); !ok || e.code != "22012" || e.msg != "division by zero" {
			t.Errorf("1/0 in a block: %v", err)
		}
		_, err = tx.ExecContext(ctx, "SELECT $1::bigint", 1)
		if e, ok := pgErr(err); !ok || e.code != "25P02" {
			t.Errorf("a statement after the failure: %v, want 25P02", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		check("after Rollback of a failed block", query("SELECT $1::bigint", 7), "7")
	}
	// A read-only block refuses writes with 25006.
	{
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO "+items+" (id) VALUES ($1)", 99)
		if e, ok := pgErr(err); !ok || e.code != "25006" || e.msg != "cannot execute INSERT in a read-only transaction" {
			t.Errorf("INSERT in a read-only block: %v, want 25006", err)
		}
		tx.Rollback()
	}

	// Errors, as the driver's error type.
	for _, c := range []struct {
		query string
		args  []any
		code  string
		msg   string
		pos   string
	}{
		{"SELECT nme FROM " + items + " WHERE id = $1", []any{1}, "42703", `column "nme" does not exist`, "8"},
		{"SELECT * FROM no_such_table WHERE id = $1", []any{1}, "42P01", `relation "no_such_table" does not exist`, "15"},
		{"SELECT id FROM " + items + " WHERE id = $1", []any{"one"}, "22P02", `invalid input syntax for type bigint: "one"`, ""},
		{"INSERT INTO " + items + " (id, name) VALUES ($1, $2)", []any{1, "again"}, "23505", fmt.Sprintf(`duplicate key value violates unique constraint "%s_pkey"`, items), ""},
		{"SELEC 1", nil, "42601", `syntax error at or near "SELEC"`, "1"},
	} {
		_, err := db.ExecContext(ctx, c.query, c.args...)
		e, ok := pgErr(err)
		if !ok {
			t.Errorf("%s: %v (%T), want the driver's PostgreSQL error", c.query, err, err)
			continue
		}
		if e.code != c.code || e.msg != c.msg || e.pos != c.pos {
			t.Errorf("%s: %s %q at %q, want %s %q at %q", c.query, e.code, e.msg, e.pos, c.code, c.msg, c.pos)
		}
	}
	// The connection goes on after them.
	check("after the errors", query("SELECT count(*) FROM "+items+" WHERE id <= $1", 6), "6")
}

// copyInLibPq fills a table through pq.CopyIn: a statement prepared in a
// transaction, one Exec per row, an empty Exec to end the COPY; then a COPY
// whose value is refused, which fails the transaction with the row's error.
func copyInLibPq(t *testing.T, db *sql.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range []string{"DROP TABLE IF EXISTS libpq_copy", "CREATE TABLE libpq_copy (id BIGINT, name TEXT, price DOUBLE PRECISION)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS libpq_copy") })
	copyIn := func(rows [][]any) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		stmt, err := tx.PrepareContext(ctx, pq.CopyIn("libpq_copy", "id", "name", "price"))
		if err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, r...); err != nil {
				return err
			}
		}
		if _, err := stmt.ExecContext(ctx); err != nil {
			return err
		}
		if err := stmt.Close(); err != nil {
			return err
		}
		return tx.Commit()
	}
	// Values pq must escape in COPY's text format: a tab, a newline, a
	// backslash, NULL.
	if err := copyIn([][]any{{1, "plain", 1.5}, {2, "tab\there", nil}, {3, "two\nlines", 2.0}, {4, `back\slash`, 0.25}, {5, nil, 3.0}}); err != nil {
		t.Fatalf("pq.CopyIn: %v", err)
	}
	var got []string
	rs, err := db.QueryContext(ctx, "SELECT id, coalesce(name, '<null>'), coalesce(price::text, '<null>') FROM libpq_copy ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id int64
		var name, price string
		if err := rs.Scan(&id, &name, &price); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d|%s|%s", id, name, price))
	}
	rs.Close()
	want := []string{"1|plain|1.5", "2|tab\there|<null>", "3|two\nlines|2", `4|back\slash|0.25`, "5|<null>|3"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows after pq.CopyIn:\n got %q\nwant %q", got, want)
	}

	err = copyIn([][]any{{6, "ok", 1.0}, {7, "bad", "cheap"}})
	var pe *pq.Error
	if !errors.As(err, &pe) || pe.Code != "22P02" || pe.Message != `invalid input syntax for type double precision: "cheap"` ||
		pe.Where != `COPY libpq_copy, line 2, column price: "cheap"` {
		t.Errorf("pq.CopyIn of a bad value: %#v, want 22P02 naming line 2, column price", err)
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM libpq_copy").Scan(&n); err != nil || n != 5 {
		t.Errorf("rows after the failed COPY: %d, %v; want 5 (none of it kept)", n, err)
	}
}

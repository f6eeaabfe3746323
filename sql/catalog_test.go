package sql

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hummer-db/hummer/exec/types"
)

func testTable(name string) *Table {
	return &Table{
		Name:       name,
		Columns:    types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "d", Type: types.DecimalType(10, 2)}},
		Engine:     "file",
		Connection: "file:///x",
		PrimaryKey: []string{"a"},
	}
}

func TestCatalogPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cat, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Create(testTable("docs"), false); err != nil {
		t.Fatal(err)
	}
	if err := cat.Create(testTable("b"), false); err != nil {
		t.Fatal(err)
	}
	if err := cat.Create(testTable("docs"), false); !errors.Is(err, ErrDuplicateTable) {
		t.Fatalf("duplicate: got %v", err)
	}
	if err := cat.Create(testTable("docs"), true); err != nil {
		t.Fatalf("IF NOT EXISTS: %v", err)
	}

	again, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Table("Docs"); ok {
		t.Error(`"Docs" found "docs": names are exact`)
	}
	got, ok := again.Table("docs")
	if !ok {
		t.Fatal("table lost on reopen")
	}
	want := testTable("docs")
	want.OID = FirstOID // the first table created; b has the next
	if b, _ := again.Table("b"); b.OID != FirstOID+1 {
		t.Errorf("b's OID: got %d, want %d", b.OID, FirstOID+1)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reopened: got %+v, want %+v", got, want)
	}
	if names := tableNames(again); names != "[b docs]" {
		t.Errorf("Tables: %s", names)
	}

	if err := again.DropTables([]string{"b", "nope"}, false); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("drop missing: got %v", err)
	}
	if names := tableNames(again); names != "[b docs]" {
		t.Errorf("a failed DROP changed the catalog: %s", names)
	}
	if err := again.DropTables([]string{"B", "b", "nope"}, true); err != nil {
		t.Fatal(err)
	}
	if err := again.Drop("docs", false); err != nil {
		t.Fatal(err)
	}
	third, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if names := tableNames(third); names != "[]" {
		t.Errorf("after drops: %s", names)
	}
	// Only the catalog file is left: temporary files were renamed or removed.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != catalogFile {
		t.Errorf("data dir holds %v", entries)
	}
}

func TestCatalogCorruptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, catalogFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCatalog(dir); err == nil {
		t.Fatal("a corrupt catalog opened")
	}
}

func TestCatalogConcurrent(t *testing.T) {
	cat, err := OpenCatalog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("t%d", i)
			for range 20 {
				if err := cat.Create(testTable(name), false); err != nil {
					t.Error(err)
					return
				}
				cat.Table(name)
				cat.Tables()
				if err := cat.Drop(name, false); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := len(cat.Tables()); n != 0 {
		t.Errorf("%d tables left", n)
	}
}

func tableNames(c *Catalog) string {
	var names []string
	for _, t := range c.Tables() {
		names = append(names, t.Name)
	}
	return fmt.Sprint(names)
}

// TestCatalogExactNames: "Users" and users are two tables, as in
// PostgreSQL, and both survive a reopen under their exact names.
func TestCatalogExactNames(t *testing.T) {
	dir := t.TempDir()
	cat, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"Users", "users"} {
		if err := cat.Create(testTable(n), false); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	again, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if names := tableNames(again); names != "[Users users]" {
		t.Errorf("Tables: %s", names)
	}
	if _, ok := again.Table("USERS"); ok {
		t.Error(`"USERS" found a table`)
	}
	if err := again.Drop("Users", false); err != nil {
		t.Fatal(err)
	}
	if names := tableNames(again); names != "[users]" {
		t.Errorf("after DROP \"Users\": %s", names)
	}
}

// TestCatalogMigratesQuotedViews: a view saved before quoted identifiers
// kept their case (a catalog without a version) that quotes a mixed-case
// spelling of a lower-case column still binds after a restart, as it did
// when it was made; a view saved since keeps its quoted names as written.
func TestCatalogMigratesQuotedViews(t *testing.T) {
	dir := t.TempDir()
	cat, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	emp := &Table{Name: "emp", Engine: "file", Connection: "file:///x",
		Columns: types.Schema{{Name: "name", Type: types.StringType}, {Name: "dept", Type: types.Int64Type}}}
	old := &Table{Name: "v", Engine: ViewEngine, Query: `SELECT "Name", count(*) AS "N" FROM "EMP" WHERE "Name" <> 'Ann "X"' GROUP BY "Name"`,
		Columns: types.Schema{{Name: "name", Type: types.StringType}, {Name: "n", Type: types.Int64Type}}}
	for _, tb := range []*Table{emp, old} {
		if err := cat.Create(tb, false); err != nil {
			t.Fatal(err)
		}
	}
	// The file as an engine before version 1 wrote it: no version.
	path := filepath.Join(dir, catalogFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f["version"] != float64(catalogVersion) {
		t.Fatalf("saved version %v, want %d", f["version"], catalogVersion)
	}
	delete(f, "version")
	data, _ = json.Marshal(f)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	again, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := again.Table("v")
	if want := `SELECT "name", count(*) AS "n" FROM "emp" WHERE "name" <> 'Ann "X"' GROUP BY "name"`; v.Query != want {
		t.Errorf("migrated query:\n got %s\nwant %s", v.Query, want)
	}
	stmts, err := Parse(v.Query)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Bind(stmts[0], again, v.Query)
	if err != nil {
		t.Fatalf("the old view does not bind: %v", err)
	}
	if got := fmt.Sprint(st.(*Query).Plan.Schema()); got != fmt.Sprint(v.Columns) {
		t.Errorf("columns %s, want %s", got, v.Columns)
	}

	// Saved since: as written; "Name" is no column of emp.
	if err := again.Create(&Table{Name: "w", Engine: ViewEngine, Query: `SELECT "Name" FROM emp`}, false); err != nil {
		t.Fatal(err)
	}
	third, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := third.Table("w"); w.Query != `SELECT "Name" FROM emp` {
		t.Errorf("a view saved at version %d was rewritten: %s", catalogVersion, w.Query)
	}
	if v, _ := third.Table("v"); !strings.Contains(v.Query, `"name"`) {
		t.Errorf("the migrated view lost its migration: %s", v.Query)
	}
}

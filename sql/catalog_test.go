package sql

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

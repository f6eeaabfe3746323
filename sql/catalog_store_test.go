package sql

import (
	"errors"
	"strings"
	"testing"
)

// memStore is a CatalogStore in memory that fails its saves while fail is set.
type memStore struct {
	data  []byte
	saves int
	fail  bool
}

func (s *memStore) Load() ([]byte, error) { return s.data, nil }

func (s *memStore) Save(data []byte) error {
	if s.fail {
		return errors.New("store unreachable")
	}
	s.data = append([]byte(nil), data...)
	s.saves++
	return nil
}

func (s *memStore) String() string { return "mem" }

// TestCatalogInStore: a catalog opened over a store reads what an earlier one
// saved there, each change replaces the document whole, and a change the
// store refuses is undone in memory too.
func TestCatalogInStore(t *testing.T) {
	store := &memStore{}
	cat, err := OpenCatalogIn(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Create(testTable("a"), false); err != nil {
		t.Fatal(err)
	}
	if err := cat.AddJob(&JobRecord{ID: "j1", Statement: "INSERT INTO a SELECT 1", View: "v"}); err != nil {
		t.Fatal(err)
	}
	if store.saves != 2 {
		t.Errorf("%d saves for two changes", store.saves)
	}
	store.fail = true
	if err := cat.Create(testTable("b"), false); err == nil || !strings.Contains(err.Error(), "store unreachable") {
		t.Errorf("a refused save: %v", err)
	}
	if _, ok := cat.Table("b"); ok {
		t.Error("a table whose save failed stayed in the catalog")
	}
	store.fail = false

	again, err := OpenCatalogIn(store)
	if err != nil {
		t.Fatal(err)
	}
	if names := tableNames(again); names != "[a]" {
		t.Errorf("reopened: tables %s, want [a]", names)
	}
	if jobs := again.Jobs(); len(jobs) != 1 || jobs[0].ID != "j1" || jobs[0].View != "v" {
		t.Errorf("reopened: jobs %+v", jobs)
	}
	if a, _ := again.Table("a"); a.OID != FirstOID {
		t.Errorf("a's OID %d, want %d", a.OID, FirstOID)
	}

	store.data = []byte("{")
	if _, err := OpenCatalogIn(store); err == nil || !strings.Contains(err.Error(), "catalog: mem:") {
		t.Errorf("a damaged document: %v, want an error naming the store", err)
	}
}

// TestCatalogOneWriter: a catalog does not overwrite a document another one
// saved since it read the store (a JobManager whose replacement already
// runs): its change is refused and undone, and the other's stays.
func TestCatalogOneWriter(t *testing.T) {
	store := &memStore{}
	old, err := OpenCatalogIn(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Create(testTable("a"), false); err != nil {
		t.Fatal(err)
	}
	replacement, err := OpenCatalogIn(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := replacement.Create(testTable("b"), false); err != nil {
		t.Fatal(err)
	}
	err = old.Create(testTable("c"), false)
	if !errors.Is(err, ErrObjectState) || !strings.Contains(err.Error(), "changed by another server") {
		t.Errorf("the old catalog's save over the replacement's: %v", err)
	}
	if _, ok := old.Table("c"); ok {
		t.Error("a refused table stayed in the old catalog")
	}
	again, err := OpenCatalogIn(store)
	if err != nil {
		t.Fatal(err)
	}
	if names := tableNames(again); names != "[a b]" {
		t.Errorf("the store holds %s, want the replacement's [a b]", names)
	}
	if err := replacement.Drop("a", false); err != nil {
		t.Errorf("the replacement's own next save: %v", err)
	}

	// A save that failed but landed (a timeout after the store took it) is
	// not taken for another writer's.
	store.fail = true
	if err := replacement.Create(testTable("d"), false); err == nil {
		t.Fatal("a failing store took a save")
	}
	store.fail = false
	store.data = append([]byte(nil), replacement.tried...)
	if err := replacement.Create(testTable("e"), false); err != nil {
		t.Errorf("a save after one that landed: %v", err)
	}
}

// TestCatalogViewWithJob: CREATE VIEW's table and the record of the job
// keeping it go in one save, or neither when the save fails; dropping the
// view forgets the job's record in the save that drops it, and leaves the
// records of other jobs (another view's, a continuous INSERT's).
func TestCatalogViewWithJob(t *testing.T) {
	store := &memStore{}
	cat, err := OpenCatalogIn(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.AddJob(&JobRecord{ID: "j0", Statement: "INSERT INTO a SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	saves := store.saves
	if err := cat.CreateView(testTable("v"), &JobRecord{ID: "j1", View: "v"}); err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateView(testTable("w"), &JobRecord{ID: "j2", View: "w"}); err != nil {
		t.Fatal(err)
	}
	if n := store.saves - saves; n != 2 {
		t.Errorf("%d saves for two views with their jobs, want 2", n)
	}
	if err := cat.CanCreate("v"); !errors.Is(err, ErrDuplicateTable) {
		t.Errorf("CanCreate of an existing view: %v", err)
	}
	if err := cat.CreateView(testTable("v"), &JobRecord{ID: "j3", View: "v"}); !errors.Is(err, ErrDuplicateTable) {
		t.Errorf("a second view v: %v", err)
	}
	store.fail = true
	if err := cat.CreateView(testTable("x"), &JobRecord{ID: "j4", View: "x"}); err == nil {
		t.Fatal("a failing store took a save")
	}
	store.fail = false
	if _, ok := cat.Table("x"); ok {
		t.Error("a view whose save failed stayed in the catalog")
	}
	jobIDs := func(c *Catalog) string {
		var ids []string
		for _, j := range c.Jobs() {
			ids = append(ids, j.ID)
		}
		return strings.Join(ids, " ")
	}
	if ids := jobIDs(cat); ids != "j0 j1 j2" {
		t.Errorf("jobs %s, want j0 j1 j2 (none of the refused views)", ids)
	}

	saves = store.saves
	if err := cat.DropTables([]string{"v"}, false); err != nil {
		t.Fatal(err)
	}
	if n := store.saves - saves; n != 1 {
		t.Errorf("%d saves for DROP VIEW, want 1", n)
	}
	if err := cat.RemoveJob("j1"); err != nil || store.saves-saves != 1 {
		t.Errorf("forgetting the dropped view's job again: %v, %d saves", err, store.saves-saves)
	}
	again, err := OpenCatalogIn(store)
	if err != nil {
		t.Fatal(err)
	}
	if names, ids := tableNames(again), jobIDs(again); names != "[w]" || ids != "j0 j2" {
		t.Errorf("reopened: tables %s, jobs %s; want [w], j0 j2", names, ids)
	}
}

package sql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/hummer-db/hummer/exec/types"
)

// CatalogReader is what Bind needs of a catalog: table lookup by name. Names are
// exact, as PostgreSQL's: the dialect layer folds unquoted names to lower case
// and keeps quoted ones ("Users") as written.
type CatalogReader interface {
	Table(name string) (*Table, bool)
}

// Catalog is the set of tables, kept in memory and persisted as one JSON
// document in a CatalogStore (a data directory's file, or an object in object
// storage) so that tables survive a restart. It is safe for concurrent use by
// many sessions. Table names are exact (catalogs written before quoted names
// kept their case hold lower-case names, which read the same).
//
// The *Table values it hands out are shared and must not be modified.
type Catalog struct {
	store CatalogStore // nil keeps the catalog in memory only
	// saved is the document as this catalog last read or wrote it in store;
	// tried is the last it failed to write, which a store that timed out may
	// hold all the same.
	saved, tried []byte

	mu     sync.RWMutex
	tables map[string]*Table // by exact name
	jobs   map[string]*JobRecord
	users  map[string]*User // by exact name (catalog_users.go)
	// lastOID is the highest object id given (giveOIDLocked).
	lastOID int64
	// restartsUnsaved says a job's count of restarts failed to save.
	restartsUnsaved bool
	// estimate, when set, estimates a table's rows from its connector.
	estimate func(*Table) (float64, bool)
	distinct func(t *Table, col int) (float64, bool)
	ranges   func(t *Table, col int, lo, hi int64) (float64, bool)
}

// RowEstimator is a CatalogReader that can estimate how many rows a table
// holds, for the binder's join order (bind_joinorder.go); +Inf for a stream.
type RowEstimator interface {
	EstimateRows(t *Table) (float64, bool)
}

// SetRowEstimator has the catalog estimate tables' rows with f (the
// connectors', which the sql package does not know).
func (c *Catalog) SetRowEstimator(f func(*Table) (float64, bool)) { c.estimate = f }

// DistinctEstimator is a RowEstimator that can also estimate how many
// distinct values a table's column holds, for the size of a join on it.
type DistinctEstimator interface {
	EstimateDistinct(t *Table, col int) (float64, bool)
}

// SetDistinctEstimator has the catalog estimate columns' distinct values with f.
func (c *Catalog) SetDistinctEstimator(f func(t *Table, col int) (float64, bool)) { c.distinct = f }

// EstimateDistinct estimates the distinct values of column col of t.
func (c *Catalog) EstimateDistinct(t *Table, col int) (float64, bool) {
	if c.distinct == nil {
		return 0, false
	}
	return c.distinct(t, col)
}

// RangeEstimator is a CatalogReader that can estimate the fraction of a
// table's rows whose BIGINT, DATE or TIMESTAMP column (an int64: a date's
// midnight, microseconds) lies in [lo, hi], for the join order.
type RangeEstimator interface {
	EstimateRange(t *Table, col int, lo, hi int64) (float64, bool)
}

// SetRangeEstimator has the catalog estimate columns' ranges with f.
func (c *Catalog) SetRangeEstimator(f func(t *Table, col int, lo, hi int64) (float64, bool)) {
	c.ranges = f
}

// EstimateRange estimates the fraction of t's rows whose column col lies in
// [lo, hi].
func (c *Catalog) EstimateRange(t *Table, col int, lo, hi int64) (float64, bool) {
	if c.ranges == nil {
		return 0, false
	}
	return c.ranges(t, col, lo, hi)
}

// EstimateRows estimates t's rows, if the catalog has an estimator and it
// knows t's connector.
func (c *Catalog) EstimateRows(t *Table) (float64, bool) {
	if c.estimate == nil {
		return 0, false
	}
	return c.estimate(t)
}

// JobRecord is a continuous job the engine resumes after a restart: its id
// (under which its checkpoints are stored), its statement, and its JobGraph as
// first scheduled (JSON), so that it resumes with the same tasks its
// checkpoints hold the state of.
type JobRecord struct {
	ID        string          `json:"id"`
	Statement string          `json:"statement"`
	Graph     json.RawMessage `json:"graph"`
	// View names the view the job keeps, for a view's job.
	View string `json:"view,omitempty"`
	// Restarts counts the job's restarts so far, the engine's own restarts
	// (which resume it) included.
	Restarts int `json:"restarts,omitempty"`
	// FailoverAfter is the job's JobOptions.FailoverAfter (from the session's
	// tolerable_failed_checkpoints), kept for its resumptions.
	FailoverAfter int `json:"failover_after,omitempty"`
}

var _ CatalogReader = (*Catalog)(nil)

// catalogVersion is the version of the catalog's file format this engine
// writes; OpenCatalog migrates what older versions saved (migrateCatalog).
//
//	0  quoted identifiers were folded to lower case like unquoted ones
//	1  quoted identifiers keep their case, as in PostgreSQL
const catalogVersion = 1

// catalogJSON is the file format.
type catalogJSON struct {
	Version int          `json:"version,omitempty"`
	Tables  []*Table     `json:"tables"`
	Jobs    []*JobRecord `json:"jobs,omitempty"`
	Users   []*User      `json:"users,omitempty"`
}

// OpenCatalog opens (creating if needed) the catalog kept in dir. An empty dir
// gives a catalog that lives in memory only, for tests and throwaway engines.
func OpenCatalog(dir string) (*Catalog, error) {
	if dir == "" {
		return OpenCatalogIn(nil)
	}
	store, err := FileCatalogStore(dir)
	if err != nil {
		return nil, err
	}
	return OpenCatalogIn(store)
}

// OpenCatalogIn opens the catalog store keeps (catalog_store.go): empty when it
// holds none yet. A nil store gives a catalog in memory only.
func OpenCatalogIn(store CatalogStore) (*Catalog, error) {
	c := &Catalog{store: store, tables: make(map[string]*Table), jobs: make(map[string]*JobRecord), users: make(map[string]*User)}
	if store == nil {
		return c, nil
	}
	data, err := store.Load()
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if data == nil {
		return c, nil
	}
	c.saved = data
	var f catalogJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", store, err)
	}
	if f.Version > catalogVersion {
		return nil, fmt.Errorf("catalog: %s has version %d; this engine reads up to %d", store, f.Version, catalogVersion)
	}
	migrateCatalog(&f)
	for _, t := range f.Tables {
		c.tables[t.Name] = t
	}
	for _, j := range f.Jobs {
		c.jobs[j.ID] = j
	}
	for _, u := range f.Users {
		c.users[u.Name] = u
	}
	for _, t := range c.tables {
		c.lastOID = max(c.lastOID, t.OID)
	}
	for _, u := range c.users {
		c.lastOID = max(c.lastOID, u.OID)
	}
	// Entries saved before OIDs existed get theirs now, in name order.
	for _, t := range c.sortedLocked() {
		c.giveOIDLocked(&t.OID, "")
	}
	for _, n := range slices.Sorted(maps.Keys(c.users)) {
		c.giveOIDLocked(&c.users[n].OID, n)
	}
	return c, nil
}

// Table returns the table called name, exactly.
func (c *Catalog) Table(name string) (*Table, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tables[name]
	return t, ok
}

// Tables returns every table, sorted by name.
func (c *Catalog) Tables() []*Table {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.sortedLocked()
}

// sortedLocked lists the tables by name. Lock should be held.
func (c *Catalog) sortedLocked() []*Table {
	ts := make([]*Table, 0, len(c.tables))
	for _, t := range c.tables {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// Create adds t under its exact name and persists the catalog. A table of
// that name already existing is an *Error of kind ErrDuplicateTable, unless
// ifNotExists, in which case Create does nothing.
func (c *Catalog) Create(t *Table, ifNotExists bool) error {
	return c.create(t, ifNotExists, nil)
}

// CreateView is Create of view t, recording job, if not nil, in the same
// save (AddJob): the job that keeps the view, already started. Either both
// are in the catalog after it, or neither.
func (c *Catalog) CreateView(t *Table, job *JobRecord) error {
	return c.create(t, false, job)
}

// CanCreate returns the error Create would return for a table named name
// that exists, or nil: a check before work that Create then undoes.
func (c *Catalog) CanCreate(name string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.tables[name]; ok {
		return duplicateTable(name)
	}
	return nil
}

func duplicateTable(name string) error {
	return Errorf(ErrDuplicateTable, 0, "relation \"%s\" already exists", name)
}

func (c *Catalog) create(t *Table, ifNotExists bool, job *JobRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tables[t.Name]; ok {
		if ifNotExists {
			return nil
		}
		return duplicateTable(t.Name)
	}
	c.giveOIDLocked(&t.OID, "")
	c.tables[t.Name] = t
	if job != nil {
		c.jobs[job.ID] = job
	}
	if err := c.saveLocked(); err != nil {
		delete(c.tables, t.Name)
		if job != nil {
			delete(c.jobs, job.ID)
		}
		return err
	}
	return nil
}

// FirstOID is the first object id the catalog gives, PostgreSQL's
// FirstNormalObjectId: those below are the system catalog's own.
const FirstOID = 16384

// SuperuserName is the superuser every engine has, owner of every table.
const SuperuserName = "hummer"

// SuperuserOID is the object id of the superuser hummer (PostgreSQL's
// BOOTSTRAP_SUPERUSERID).
const SuperuserOID = 10

// giveOIDLocked gives *oid, if unset, the next object id: one above every id
// the catalog gave (user is the user's name, for the superuser's fixed id).
// Lock should be held.
func (c *Catalog) giveOIDLocked(oid *int64, user string) {
	if *oid != 0 {
		return
	}
	if user == SuperuserName {
		*oid = SuperuserOID
		return
	}
	c.lastOID = max(c.lastOID+1, FirstOID)
	*oid = c.lastOID
}

// Drop removes the table called name and persists the catalog. A missing table is
// an *Error of kind ErrUnknownTable unless ifExists.
func (c *Catalog) Drop(name string, ifExists bool) error {
	return c.DropTables([]string{name}, ifExists)
}

// DropTables removes every named table, or none: with a missing table and not
// ifExists, it returns an *Error of kind ErrUnknownTable and changes nothing (as
// PostgreSQL's DROP TABLE a, b). The jobs recorded as keeping a removed view
// (JobRecord.View) go in the same save: their view gone, they are not to
// resume, and the caller stops them.
func (c *Catalog) DropTables(names []string, ifExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	removed := make(map[string]*Table)
	for _, n := range names {
		t, ok := c.tables[n]
		if !ok {
			if _, gone := removed[n]; gone || ifExists {
				continue
			}
			return Errorf(ErrUnknownTable, 0, "table \"%s\" does not exist", n)
		}
		removed[n] = t
	}
	if len(removed) == 0 {
		return nil
	}
	for n := range removed {
		delete(c.tables, n)
	}
	var jobs []*JobRecord
	for id, j := range c.jobs {
		if _, ok := removed[j.View]; ok && j.View != "" {
			jobs = append(jobs, j)
			delete(c.jobs, id)
		}
	}
	restoreGrants := c.forgetGrantsLocked(slices.Collect(maps.Keys(removed)))
	if err := c.saveLocked(); err != nil {
		for n, t := range removed {
			c.tables[n] = t
		}
		for _, j := range jobs {
			c.jobs[j.ID] = j
		}
		restoreGrants()
		return err
	}
	return nil
}

// AddJob records a continuous job, to resume after a restart.
func (c *Catalog) AddJob(j *JobRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobs[j.ID] = j
	return c.saveLocked()
}

// SetJobRestarts records that job id has restarted n times; a job not
// recorded is left alone. A count that could not be saved (a full disk) is
// saved by the next call, even with the same n.
func (c *Catalog) SetJobRestarts(id string, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok || j.Restarts == n && !c.restartsUnsaved {
		return nil
	}
	j.Restarts = n
	err := c.saveLocked()
	c.restartsUnsaved = err != nil
	return err
}

// RemoveJob forgets a job (it ended, or was killed).
func (c *Catalog) RemoveJob(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.jobs[id]; !ok {
		return nil
	}
	delete(c.jobs, id)
	return c.saveLocked()
}

// Jobs returns the recorded jobs.
func (c *Catalog) Jobs() []*JobRecord {
	c.mu.RLock()
	defer c.mu.RUnlock()
	jobs := make([]*JobRecord, 0, len(c.jobs))
	for _, j := range c.jobs {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	return jobs
}

// saveLocked replaces the catalog in its store whole. Lock should be held.
func (c *Catalog) saveLocked() error {
	if c.store == nil {
		return nil
	}
	jobs := make([]*JobRecord, 0, len(c.jobs))
	for _, j := range c.jobs {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	data, err := json.MarshalIndent(catalogJSON{Version: catalogVersion, Tables: c.sortedLocked(), Jobs: jobs, Users: c.usersLocked()}, "", "  ")
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	data = append(data, '\n')
	// One writer: a document another server saved since this catalog read it
	// is not overwritten (a JobManager whose replacement already runs). This
	// narrows the window rather than closing it: two saves between each
	// other's Load and Save still race, and the last wins.
	cur, err := c.store.Load()
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if !bytes.Equal(cur, c.saved) && (c.tried == nil || !bytes.Equal(cur, c.tried)) {
		return Errorf(ErrObjectState, 0, "catalog %s was changed by another server since this one read it: restart this one to read it", c.store)
	}
	if err := c.store.Save(data); err != nil {
		c.tried = data
		return fmt.Errorf("catalog: %w", err)
	}
	c.saved, c.tried = data, nil
	return nil
}

// columnIndex is the position of the column named name, compared exactly as
// PostgreSQL compares names (types.Schema.Index ignores case), or -1.
func columnIndex(cols types.Schema, name string) int {
	for i, f := range cols {
		if f.Name == name {
			return i
		}
	}
	return -1
}

package memory

import (
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// Store holds named in-process tables of Arrow batches. Batches in a store are
// retained by it and never modified; a Store is safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	tables map[string]*table
}

type table struct {
	schema  types.Schema
	batches []exec.Batch
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{tables: map[string]*table{}} }

// Put replaces table name with the given batches, all inserts, which the store
// retains. Each batch's columns must have the schema's types.
func (s *Store) Put(name string, schema types.Schema, batches ...arrow.RecordBatch) error {
	t := &table{schema: slices.Clone(schema)}
	for _, rec := range batches {
		if err := checkRecord(schema, rec); err != nil {
			return fmt.Errorf("memory: table %s: %w", name, err)
		}
	}
	for _, rec := range batches {
		rec.Retain()
		t.batches = append(t.batches, exec.Batch{Rec: rec})
	}
	s.mu.Lock()
	old := s.tables[name]
	s.tables[name] = t
	s.mu.Unlock()
	old.release()
	return nil
}

// Append adds one batch (with its change kinds) to table name, creating the table
// with the given schema if it does not exist. The store retains the batch.
func (s *Store) Append(name string, schema types.Schema, b exec.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.create(name, schema)
	if err != nil {
		return err
	}
	if err := checkRecord(t.schema, b.Rec); err != nil {
		return fmt.Errorf("memory: table %s: %w", name, err)
	}
	b.Rec.Retain()
	t.batches = append(t.batches, exec.Batch{Rec: b.Rec, Ops: slices.Clone(b.Ops)})
	return nil
}

// Create makes an empty table name with the given schema, unless it exists with
// the same column types already.
func (s *Store) Create(name string, schema types.Schema) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.create(name, schema)
	return err
}

// create returns table name, made empty with schema if missing. Lock should be held.
func (s *Store) create(name string, schema types.Schema) (*table, error) {
	t, ok := s.tables[name]
	if !ok {
		t = &table{schema: slices.Clone(schema)}
		s.tables[name] = t
		return t, nil
	}
	if !sameTypes(t.schema, schema) {
		return nil, fmt.Errorf("memory: table %s is %v, not %v", name, t.schema, schema)
	}
	return t, nil
}

// Batches returns the batches of table name in the order they were added, each
// retained for the caller, who must Release it; ok is false if there is no such
// table.
func (s *Store) Batches(name string) (batches []exec.Batch, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[name]
	if !ok {
		return nil, false
	}
	batches = slices.Clone(t.batches)
	for _, b := range batches {
		b.Rec.Retain()
	}
	return batches, true
}

// Schema returns the schema of table name.
func (s *Store) Schema(name string) (types.Schema, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[name]
	if !ok {
		return nil, false
	}
	return slices.Clone(t.schema), true
}

// Drop removes table name, releasing its batches. Sources already reading it keep
// their own references.
func (s *Store) Drop(name string) {
	s.mu.Lock()
	t := s.tables[name]
	delete(s.tables, name)
	s.mu.Unlock()
	t.release()
}

// Close drops every table.
func (s *Store) Close() {
	s.mu.Lock()
	tables := s.tables
	s.tables = map[string]*table{}
	s.mu.Unlock()
	for _, t := range tables {
		t.release()
	}
}

// snapshot is how far table name went when a source was made: the table
// and its number of batches (nil if there was none).
type snapshot struct {
	t *table
	n int
}

// mark returns the snapshot of table name now.
func (s *Store) mark(name string) snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[name]
	if t == nil {
		return snapshot{}
	}
	return snapshot{t, len(t.batches)}
}

// share returns the batches subtask of parallelism takes from table name (every
// parallelism-th one, from the subtask-th), retained for the caller: of the
// first snap.n, if the table is still snap's, so that what a job's sink
// appends after snap is not read by its own sources.
func (s *Store) share(name string, subtask, parallelism int, snap snapshot) ([]exec.Batch, types.Schema, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[name]
	if !ok {
		return nil, nil, false
	}
	n := len(t.batches)
	if t == snap.t {
		n = snap.n
	} else if snap.t == nil {
		n = 0 // made after the source: all of it is newer
	}
	var share []exec.Batch
	for i := subtask; i < n; i += parallelism {
		t.batches[i].Rec.Retain()
		share = append(share, t.batches[i])
	}
	return share, t.schema, true
}

func (t *table) release() {
	if t == nil {
		return
	}
	for _, b := range t.batches {
		b.Rec.Release()
	}
	t.batches = nil
}

func checkRecord(schema types.Schema, rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(schema) {
		return fmt.Errorf("batch has %d columns, the table %d", rec.NumCols(), len(schema))
	}
	for i, f := range schema {
		if got := rec.Column(i).DataType(); !arrow.TypeEqual(got, f.Type.Arrow()) {
			return fmt.Errorf("column %s is %v in the batch, %v in the table", f.Name, got, f.Type)
		}
	}
	return nil
}

func sameTypes(a, b types.Schema) bool {
	return slices.EqualFunc(a, b, func(x, y types.Field) bool { return x.Type == y.Type })
}

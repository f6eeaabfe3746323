package sql

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CatalogStore keeps the catalog's one document: the catalog reads it once
// when it opens and replaces it whole on every change. Its implementations
// are the data directory's file (FileCatalogStore) and an object in object
// storage (exec/checkpoint's Object, which the binary wires in: this package
// links no object storage driver).
//
// A store has one writer. Two catalogs over one store do not see each
// other's changes; a catalog reads the document again before each save and
// refuses to overwrite one another catalog saved since (ErrObjectState), which
// leaves only saves racing within each other's read and write to overwrite.
type CatalogStore interface {
	// Load returns the document last saved, or nil and no error when none
	// was.
	Load() ([]byte, error)
	// Save replaces the document with data atomically: a Load after a
	// failed Save returns the old document or the new one, never a part.
	Save(data []byte) error
	// String names the store for errors and logs, without credentials.
	String() string
}

// catalogFile is the name of the catalog's file inside its data directory.
const catalogFile = "catalog.json"

// fileStore is a CatalogStore in a directory's catalog.json.
type fileStore struct{ dir string }

// FileCatalogStore returns the store of the catalog in dir/catalog.json,
// creating dir if needed.
func FileCatalogStore(dir string) (CatalogStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return fileStore{dir}, nil
}

func (s fileStore) String() string { return filepath.Join(s.dir, catalogFile) }

func (s fileStore) Load() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, catalogFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// Save writes a temporary file in the same directory, syncs it, then renames
// it over the old one and syncs the directory, so that the rename is durable.
func (s fileStore) Save(data []byte) error {
	f, err := os.CreateTemp(s.dir, catalogFile+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, catalogFile))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(s.dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

package disk

// Incremental checkpoints of a DB (see the package doc).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hummer-db/hummer/exec"
)

// ErrDamaged: a checkpoint's file is missing from the checkpoint store or not
// what the checkpoint wrote.
var ErrDamaged = errors.New("disk state: damaged checkpoint")

// SharedFile is a file of a DB's checkpoint kept in the checkpoint store,
// shared by every checkpoint that needs it.
type SharedFile struct {
	Local  string `json:"local"`  // its name in the DB's directory
	Shared string `json:"shared"` // its name in the store (StateFiles)
	Size   int64  `json:"size"`
	CRC    uint32 `json:"crc"` // CRC-32C of its bytes
}

// Manifest is what a checkpoint of a DB records in the operator's state: its
// shared files and its small files inline.
type Manifest struct {
	Shared []SharedFile      `json:"shared"`
	Inline map[string][]byte `json:"inline"`
	// Uploaded is how many bytes this checkpoint uploaded, Total the size of
	// every file it needs: the measure of incremental checkpoints.
	Uploaded int64 `json:"uploaded"`
	Total    int64 `json:"total"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// isShared says a file of a pebble checkpoint is immutable and numbered
// once (a table or a blob file), so it is uploaded once and shared.
func isShared(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// Checkpoint takes checkpoint id of the DB: it flushes what is in memory,
// takes a pebble checkpoint and uploads its files not uploaded by an earlier
// checkpoint of this run to files, under owner's references. It returns the
// manifest, for the operator's state blob.
func (d *DB) Checkpoint(ctx context.Context, files exec.StateFiles, id int64) (*Manifest, error) {
	if files == nil {
		return nil, fmt.Errorf("disk state: checkpoint %d without a checkpoint store", id)
	}
	if err := d.db.Flush(); err != nil {
		return nil, fmt.Errorf("disk state: flush: %w", err)
	}
	dir := filepath.Join(d.dir, fmt.Sprintf("checkpoint-%d", id))
	os.RemoveAll(dir) // from a checkpoint that failed half way
	if err := d.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("disk state: checkpoint %d: %w", id, err)
	}
	defer os.RemoveAll(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Inline: map[string][]byte{}}
	var fresh []SharedFile
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if !isShared(name) {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			m.Inline[name] = data
			m.Total += int64(len(data))
			continue
		}
		f, ok := d.shared[name]
		if !ok {
			size, crc, err := fileCRC(path)
			if err != nil {
				return nil, err
			}
			f = SharedFile{Local: name, Shared: d.run + "-" + name, Size: size, CRC: crc}
			fresh = append(fresh, f)
		}
		m.Shared = append(m.Shared, f)
		m.Total += f.Size
	}
	names := make([]string, len(m.Shared))
	for i, f := range m.Shared {
		names[i] = f.Shared
	}
	// The references first: a file uploaded by a checkpoint that then
	// fails is referred to, and pruning that checkpoint deletes it.
	if err := files.Refer(ctx, id, d.run, names); err != nil {
		return nil, fmt.Errorf("disk state: checkpoint %d: %w", id, err)
	}
	for _, f := range fresh {
		if err := files.Upload(ctx, f.Shared, filepath.Join(dir, f.Local)); err != nil {
			return nil, fmt.Errorf("disk state: checkpoint %d: uploading %s: %w", id, f.Local, err)
		}
		d.shared[f.Local] = f
		m.Uploaded += f.Size
	}
	for _, v := range m.Inline {
		m.Uploaded += int64(len(v))
	}
	return m, nil
}

// fileCRC returns the size and CRC-32C of the file at path.
func fileCRC(path string) (int64, uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	return n, h.Sum32(), err
}

// MarshalManifest and UnmarshalManifest are a manifest's encoding in the
// operator's state.
func MarshalManifest(m *Manifest) ([]byte, error) { return json.Marshal(m) }

// UnmarshalManifest reads what MarshalManifest wrote.
func UnmarshalManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrDamaged, err)
	}
	return &m, nil
}

// Restore makes a DB of checkpoint m: it downloads m's shared files from
// files, checking each one's size and checksum, writes its inline files, and
// opens the DB. The new DB's files already in the store are not uploaded
// again.
func Restore(ctx context.Context, opts Options, files exec.StateFiles, m *Manifest) (*DB, error) {
	if files == nil && len(m.Shared) > 0 {
		return nil, fmt.Errorf("disk state: restore without a checkpoint store")
	}
	dir, err := os.MkdirTemp(opts.Dir, "hummer-state-")
	if err != nil {
		return nil, fmt.Errorf("disk state: %w", err)
	}
	fail := func(err error) (*DB, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	names := make([]string, 0, len(m.Inline))
	for name := range m.Inline {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !filepath.IsLocal(name) || strings.ContainsRune(name, filepath.Separator) {
			return fail(fmt.Errorf("%w: file name %q", ErrDamaged, name))
		}
		if err := os.WriteFile(filepath.Join(dir, name), m.Inline[name], 0o644); err != nil {
			return fail(err)
		}
	}
	for _, f := range m.Shared {
		if !filepath.IsLocal(f.Local) || strings.ContainsRune(f.Local, filepath.Separator) || !isShared(f.Local) {
			return fail(fmt.Errorf("%w: file name %q", ErrDamaged, f.Local))
		}
		path := filepath.Join(dir, f.Local)
		if err := files.Download(ctx, f.Shared, path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fail(fmt.Errorf("%w: state file %s is missing from the checkpoint store", ErrDamaged, f.Shared))
			}
			return fail(fmt.Errorf("disk state: downloading %s: %w", f.Shared, err))
		}
		size, crc, err := fileCRC(path)
		if err != nil {
			return fail(err)
		}
		if size != f.Size || crc != f.CRC {
			return fail(fmt.Errorf("%w: state file %s is %d bytes of CRC-32C %08x, the checkpoint wrote %d bytes of %08x",
				ErrDamaged, f.Shared, size, crc, f.Size, f.CRC))
		}
	}
	d, err := openAt(opts, dir)
	if err != nil {
		return fail(err)
	}
	for _, f := range m.Shared {
		d.shared[f.Local] = f
	}
	return d, nil
}

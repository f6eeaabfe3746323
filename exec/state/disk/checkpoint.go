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
	"sync"

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

// Checkpoint takes checkpoint id of the DB and uploads it: StartCheckpoint
// then Finish, on the caller's goroutine.
func (d *DB) Checkpoint(ctx context.Context, files exec.StateFiles, id int64) (*Manifest, error) {
	p, err := d.StartCheckpoint(id)
	if err != nil {
		return nil, err
	}
	return p.Finish(ctx, files)
}

// PendingCheckpoint is a checkpoint of a DB taken as of one moment
// (StartCheckpoint) whose files are not yet in the checkpoint store
// (Finish).
type PendingCheckpoint struct {
	d   *DB
	id  int64
	dir string // the pebble checkpoint: hard links to the DB's files
	// prev is closed when the DB's checkpoint before this one finished;
	// done when this one did.
	prev, done chan struct{}
	once       sync.Once
}

// StartCheckpoint takes checkpoint id of the DB as it is now: it flushes
// what is in memory and takes a pebble checkpoint, hard links to the DB's
// immutable files, which stay while compactions replace them in the DB. It
// reads and uploads nothing, so the DB's user can go on writing while
// Finish, which must follow, uploads on another goroutine.
func (d *DB) StartCheckpoint(id int64) (*PendingCheckpoint, error) {
	if err := d.db.Flush(); err != nil {
		return nil, fmt.Errorf("disk state: flush: %w", err)
	}
	dir := filepath.Join(d.dir, fmt.Sprintf("checkpoint-%d", id))
	os.RemoveAll(dir) // from a checkpoint that failed half way
	if err := d.db.Checkpoint(dir); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("disk state: checkpoint %d: %w", id, err)
	}
	p := &PendingCheckpoint{d: d, id: id, dir: dir, prev: d.lastCheckpoint, done: make(chan struct{})}
	d.lastCheckpoint = p.done
	return p, nil
}

// Finish uploads the checkpoint's files that no earlier checkpoint of this
// run of the DB uploaded to files, under the DB's references, and returns
// the manifest, for the operator's state blob. It may run on any goroutine,
// while the DB is in use. The checkpoints of a DB finish one at a time, in
// the order they started: a file two of them need is uploaded by the first,
// or by the second when the first failed. Call it once; after the DB's
// Close it fails.
func (p *PendingCheckpoint) Finish(ctx context.Context, files exec.StateFiles) (m *Manifest, err error) {
	d := p.d
	defer p.once.Do(func() {
		os.RemoveAll(p.dir)
		close(p.done)
	})
	if files == nil {
		return nil, fmt.Errorf("disk state: checkpoint %d without a checkpoint store", p.id)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, fmt.Errorf("disk state: checkpoint %d of a closed DB", p.id)
	}
	d.finishing.Add(1)
	d.mu.Unlock()
	defer d.finishing.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.closing, cancel)()
	if p.prev != nil {
		select {
		case <-p.prev:
		case <-ctx.Done():
			return nil, fmt.Errorf("disk state: checkpoint %d: %w", p.id, context.Cause(ctx))
		}
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, err
	}
	m = &Manifest{Inline: map[string][]byte{}}
	var fresh []SharedFile
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(p.dir, name)
		if !isShared(name) {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			m.Inline[name] = data
			m.Total += int64(len(data))
			continue
		}
		d.mu.Lock()
		f, ok := d.shared[name]
		d.mu.Unlock()
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
	if err := files.Refer(ctx, p.id, d.run, names); err != nil {
		return nil, fmt.Errorf("disk state: checkpoint %d: %w", p.id, err)
	}
	for _, f := range fresh {
		if err := files.Upload(ctx, f.Shared, filepath.Join(p.dir, f.Local)); err != nil {
			return nil, fmt.Errorf("disk state: checkpoint %d: uploading %s: %w", p.id, f.Local, err)
		}
		d.mu.Lock()
		d.shared[f.Local] = f
		d.mu.Unlock()
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

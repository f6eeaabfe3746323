package table

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// BatchRows is the most rows a record batch of a segment holds; a statement's
// rows are gathered into batches of this size before they are written.
const BatchRows = 64 << 10

// mergeSmall is how many segments of fewer than BatchRows rows a table may
// hold before a commit merges them into one: many single-row INSERTs end up in
// a few big segments, so that a scan reads few files.
const mergeSmall = 16

// Store keeps the tables in a directory, one subdirectory per table id. It is
// safe for concurrent use.
type Store struct {
	root   string
	mu     sync.Mutex
	tables map[string]*tableState // loaded on first use, by id
	// foldRecords and foldBytes are the log records and bytes that make the
	// next group's writer fold a table's log (wal.go); set before first use.
	foldRecords int
	foldBytes   int64
	// background counts the group writers and folds running after the
	// statement that started them returned (group.go); Close waits for them.
	background sync.WaitGroup
}

// tableState is what the store knows of one table.
type tableState struct {
	id, dir string
	// writer is held by the table's open Tx, if any; commitMu while a
	// version is written and installed (a Tx's, or a group's: group.go).
	writer   sync.Mutex
	commitMu sync.Mutex
	groups   groups

	mu       sync.Mutex // guards what follows
	current  *version
	pins     map[int64]int      // pinned versions and their counts
	retained map[int64]*version // versions kept for their pins: not current
	nextFile int64
	dropped  bool // Drop was called: the directory goes with the last pin
	// keys are the primary keys of the current version, encoded (keyOf), for
	// keyCols; nil until a keyed Tx first needs them.
	keys    map[string]struct{}
	keyCols []int
	// ndv are the distinct-value estimates of version ndvVersion, by column,
	// and samples the sampled values of its integer columns (rangeSample).
	ndv        map[int]float64
	samples    map[int]*rangeSample
	ndvVersion int64
	// followers counts the scans that follow the table's changes (Follow):
	// while there are any, each commit records its changes (changes.go).
	followers int
	// recording: commits record their changes though no follower is
	// registered: the table had changes recorded when it was loaded, for a
	// follower resuming after a restart; until the first follower goes.
	recording bool
	changes   []changeFile // recorded, oldest first, for pruning
	// dirFile is the table's directory, open for its fsyncs (commitMu).
	dirFile *os.File
	// log is the current version's log file (logName), open for appends
	// (commitMu).
	log     *os.File
	logName string
	logSize int64 // the log file's length: its records, then zeros (wal.go)
}

// syncDir fsyncs the table's directory, kept open between commits. The
// caller holds commitMu.
func (t *tableState) syncDir() error {
	if t.dirFile == nil {
		d, err := os.Open(t.dir)
		if err != nil {
			return fmt.Errorf("table store: %w", err)
		}
		t.dirFile = d
	}
	if err := t.dirFile.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		t.dirFile.Close()
		t.dirFile = nil
		return fmt.Errorf("table store: %w", err)
	}
	return nil
}

// writeVersion commits v through the table's open directory (writeVersion).
// The caller holds commitMu.
func (t *tableState) writeVersion(v *version) error { return writeVersion(t.dir, v, t.syncDir) }

// version is one committed state of a table: the segments that hold its rows.
type version struct {
	Version  int64     `json:"version"`
	Segments []segment `json:"segments"`
	// Sinks are, by sink (a continuous job's subtask), the last checkpoint
	// whose changes a version committed (sink.go).
	Sinks map[string]int64 `json:"sinks,omitempty"`
	// Log is the table's write-ahead log file and LogStart the offset in it
	// where the version's log rows start (wal.go).
	Log      string `json:"log,omitempty"`
	LogStart int64  `json:"log_start,omitempty"`

	// Not in the file: file is the number of the version file holding the
	// fields above (a version committed to the log has none of its own), and
	// the log's records up to logEnd are the version's, logRows rows in
	// logRecords records.
	file       int64
	logEnd     int64
	logRows    int64
	logRecords int
}

type segment struct {
	File string `json:"file"`
	Rows int64  `json:"rows"`
	// Ranges are, per column (nil for one without), the least and greatest
	// of its non-NULL values, for bigint, timestamp and date columns: a scan
	// whose filter no value in range can satisfy skips the segment
	// (prune.go).
	Ranges []*valueRange `json:"ranges,omitempty"`
}

func (v *version) rows() int64 {
	n := v.logRows
	for _, s := range v.Segments {
		n += s.Rows
	}
	return n
}

// OpenStore opens (creating it if missing) the store rooted at dir.
func OpenStore(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("table store: %w", err)
	}
	return &Store{root: abs, tables: map[string]*tableState{}, foldRecords: 1024, foldBytes: 16 << 20}, nil
}

// Close waits for the writes and folds a committed statement left running in
// the background. The store's files stay as they are; a Store may be opened on
// them again.
func (s *Store) Close() {
	s.background.Wait()
}

// Create makes an empty table id. A directory left by a table of that id
// that was dropped (or by a crash) is removed first.
func (s *Store) Create(id string) error {
	if !validID(id) {
		return fmt.Errorf("table store: bad table id %q", id)
	}
	dir := filepath.Join(s.root, id)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	if err := writeSynced(filepath.Join(dir, logFile(1)), nil); err != nil {
		return err
	}
	if err := writeVersion(dir, &version{Version: 1, Log: logFile(1)}, func() error { return syncDir(dir) }); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.tables, id)
	s.mu.Unlock()
	return syncDir(s.root)
}

// Drop removes table id: at once if nothing reads it, else when the last
// pinned version is released.
func (s *Store) Drop(id string) error {
	s.mu.Lock()
	t, ok := s.tables[id]
	delete(s.tables, id)
	s.mu.Unlock()
	if ok {
		t.commitMu.Lock()
		if t.dirFile != nil {
			t.dirFile.Close()
			t.dirFile = nil
		}
		if t.log != nil {
			t.log.Close()
			t.log = nil
		}
		t.commitMu.Unlock()
		t.mu.Lock()
		t.dropped = true
		busy := len(t.pins) > 0
		t.mu.Unlock()
		if busy {
			return nil
		}
	}
	if err := os.RemoveAll(filepath.Join(s.root, id)); err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	segmentMaps.forget(filepath.Join(s.root, id))
	return nil
}

// Keep removes the directories of every table whose id is not in live: those
// of tables dropped while the engine was down or before their removal
// finished.
func (s *Store) Keep(live map[string]bool) error {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() && !live[e.Name()] {
			if err := s.Drop(e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// table returns table id's state, loading its last committed version and
// removing what a crash left behind (files of no version).
func (s *Store) table(id string) (*tableState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tables[id]; ok {
		return t, nil
	}
	if !validID(id) {
		return nil, fmt.Errorf("table store: bad table id %q", id)
	}
	dir := filepath.Join(s.root, id)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("table store: table %s: %w", id, err)
	}
	var last int64
	var next int64 = 1
	for _, e := range ents {
		if n, ok := fileNumber(e.Name(), "v-", ".json"); ok {
			last = max(last, n)
		}
		if n, ok := fileNumber(e.Name(), "s-", ".arrow"); ok {
			next = max(next, n+1)
		}
	}
	if last == 0 {
		return nil, fmt.Errorf("table store: table %s has no version", id)
	}
	v, err := readVersion(dir, last)
	if err != nil {
		return nil, err
	}
	v.file = last
	t := &tableState{id: id, dir: dir, pins: map[int64]int{}, retained: map[int64]*version{}, nextFile: next}
	if v, err = t.recoverLog(v); err != nil {
		return nil, fmt.Errorf("table store: table %s: %w", id, err)
	}
	t.current = v
	live := map[string]bool{versionFile(v.file): true, v.Log: true}
	for _, seg := range v.Segments {
		live[seg.File] = true
	}
	kept := t.keepChanges(ents, v.Version) // changes.go
	for _, e := range ents {
		if !live[e.Name()] && !kept[e.Name()] {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if err := t.openLog(v.Log); err != nil {
		return nil, err
	}
	if err := t.log.Sync(); err != nil { // the cut of a torn record
		return nil, fmt.Errorf("table store: %w", err)
	}
	s.tables[id] = t
	return t, nil
}

// Pinned is a version of a table that stays readable until Release.
type Pinned struct {
	// URL is the table's URL for a scan of this version (the source's input).
	URL string
	// Rows is the number of rows in the version.
	Rows    int64
	release func()
	once    sync.Once
}

// Release lets the version go; safe to call twice.
func (p *Pinned) Release() { p.once.Do(p.release) }

// Pin pins table id's current version for a scan.
func (s *Store) Pin(id string) (*Pinned, error) {
	t, err := s.table(id)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	v := t.current
	t.pins[v.Version]++
	t.mu.Unlock()
	q := url.Values{"dir": {t.dir}, "version": {strconv.FormatInt(v.Version, 10)},
		"file": {strconv.FormatInt(v.file, 10)}, "logend": {strconv.FormatInt(v.logEnd, 10)}}
	return &Pinned{URL: URL(id) + "?" + q.Encode(), Rows: v.rows(), release: func() { s.unpin(t, v.Version) }}, nil
}

// Rows returns the number of rows table id holds now.
func (s *Store) Rows(id string) (int64, error) {
	t, err := s.table(id)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current.rows(), nil
}

func (s *Store) unpin(t *tableState, v int64) {
	t.mu.Lock()
	t.pins[v]--
	if t.pins[v] > 0 {
		t.mu.Unlock()
		return
	}
	delete(t.pins, v)
	if t.dropped && len(t.pins) == 0 {
		t.mu.Unlock()
		os.RemoveAll(t.dir)
		segmentMaps.forget(t.dir)
		return
	}
	old, ok := t.retained[v]
	delete(t.retained, v)
	var dead []string
	if ok {
		dead = t.unreferenced(old)
	}
	t.mu.Unlock()
	removeFiles(t.dir, dead)
}

// unreferenced returns the files of old (a version no longer current or
// pinned) that neither the current version nor a retained one lists. Lock
// should be held.
func (t *tableState) unreferenced(old *version) []string {
	used := map[string]bool{}
	for _, v := range append([]*version{t.current}, mapValues(t.retained)...) {
		used[versionFile(v.file)], used[v.Log] = true, true
		for _, seg := range v.Segments {
			used[seg.File] = true
		}
	}
	var dead []string
	for _, f := range old.files() {
		if !used[f] {
			dead = append(dead, f)
		}
	}
	return dead
}

// install makes v the current version after its file was committed, and
// returns the files nothing needs any more. Lock should be held.
func (t *tableState) install(v *version) []string {
	old := t.current
	t.current = v
	if t.pins[old.Version] > 0 {
		t.retained[old.Version] = old
		return nil
	}
	return t.unreferenced(old)
}

// files are the files v reads.
func (v *version) files() []string {
	fs := []string{versionFile(v.file)}
	if v.Log != "" {
		fs = append(fs, v.Log)
	}
	for _, seg := range v.Segments {
		fs = append(fs, seg.File)
	}
	return fs
}

func mapValues(m map[int64]*version) []*version {
	vs := make([]*version, 0, len(m))
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

func removeFiles(dir string, names []string) {
	if len(names) == 0 {
		return
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
		os.Remove(paths[i])
	}
	segmentMaps.forget("", paths...)
}

func versionFile(n int64) string { return fmt.Sprintf("v-%08d.json", n) }
func segmentFile(n int64) string { return fmt.Sprintf("s-%08d.arrow", n) }

// fileNumber parses the number of a file named prefix<n>suffix.
func fileNumber(name, prefix, suffix string) (int64, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, suffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

func readVersion(dir string, n int64) (*version, error) {
	data, err := os.ReadFile(filepath.Join(dir, versionFile(n)))
	if err != nil {
		return nil, fmt.Errorf("table store: %w", err)
	}
	var v version
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("table store: %s: %w", versionFile(n), err)
	}
	if v.Version != n {
		return nil, fmt.Errorf("table store: %s holds version %d", versionFile(n), v.Version)
	}
	return &v, nil
}

// writeVersion commits v: its file is written under a temporary name,
// fsynced, renamed into place and the directory fsynced (by syncDir), so
// that the version exists whole or not at all.
func writeVersion(dir string, v *version, syncDir func() error) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, versionFile(v.Version)+".tmp")
	if err := writeSynced(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, versionFile(v.Version))); err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	return syncDir()
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("table store: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("table store: %w", err)
	}
	return nil
}

// Distinct estimates the distinct values of column col of table id, for the
// planner's join order, from a sample of its rows (distinctSample). Estimates
// are kept until the table's next version.
func (s *Store) Distinct(id string, col int) (float64, bool) {
	t, err := s.table(id)
	if err != nil {
		return 0, false
	}
	t.mu.Lock()
	v := t.current
	if t.ndvVersion == v.Version {
		d, ok := t.ndv[col]
		t.mu.Unlock()
		if ok {
			return d, d > 0
		}
	} else {
		t.ndv, t.samples, t.ndvVersion = map[int]float64{}, map[int]*rangeSample{}, v.Version
		t.mu.Unlock()
	}
	d := t.distinctSample(v, col)
	t.mu.Lock()
	if t.ndvVersion == v.Version {
		t.ndv[col] = d
	}
	t.mu.Unlock()
	return d, d > 0
}

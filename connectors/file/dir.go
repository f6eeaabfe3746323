package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hummer-db/hummer/exec"
)

// Reading a directory table (a CONNECTION path ending in "/"): the source
// reads every committed file under the directory, in the table's format,
// skipping the files and directories whose names start with "." or "_"
// (the sink's in-progress files, and markers such as _SUCCESS, as Hive and
// Flink skip them). A directory not there yet reads as empty: a table
// created to be written to, before anything was.
//
// The files are listed once, at Open, and sorted by path; subtask i of n
// reads files i, i+n, i+2n, ..., each whole, one after the other, as the
// source of a single file does (so header=true skips each file's first
// record). With checkpoints its position is the file it reads (its index in
// the subtask's share, and its path, checked on restore) and the offset in
// it.

// dirSource reads one subtask's share of a directory's files.
type dirSource struct {
	cfg   config
	tc    *exec.TaskContext
	files []string // this subtask's share, full paths
	// lock is the task's checkpoint lock (nil without checkpoints): cur and
	// next change under it, so that a snapshot sees a file and its offset.
	lock *sync.Mutex
	next int     // the index in files of the file cur reads
	cur  *source // nil before the first file and after the last
	// restored is the offset in files[next] a restored job reads on from.
	restored []byte
}

var (
	_ exec.Source       = (*dirSource)(nil)
	_ exec.Checkpointed = (*dirSource)(nil)
)

func newDirSource(cfg config) *dirSource { return &dirSource{cfg: cfg} }

// listFiles returns the committed files under dir, sorted; none when dir is
// not there.
func listFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if p == dir {
			if !d.IsDir() {
				return fmt.Errorf("not a directory")
			}
			return nil
		}
		if name := d.Name(); strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files) // WalkDir's lexical order per directory is not the paths' order
	return files, err
}

// checkDir is CheckFile for a directory table: the path is a directory, or
// not there yet (the sink creates it).
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &fileError{code: "58030", err: err, msg: fmt.Sprintf("could not stat directory \"%s\": %s", dir, strerror(unwrapPath(err)))}
	case !st.IsDir():
		return &fileError{code: "42809", err: errors.New("not a directory"),
			msg: fmt.Sprintf("\"%s\" is not a directory: a file table whose path ends with / reads and writes a directory of part files", dir)}
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Open lists the directory and takes this subtask's share of its files.
func (s *dirSource) Open(ctx context.Context, tc *exec.TaskContext) error {
	s.tc, s.lock = tc, tc.CheckpointLock
	all, err := listFiles(s.cfg.path)
	if err != nil {
		return fmt.Errorf("%w: file table %s: %w", exec.ErrBadInput, s.cfg.path, unwrapPath(err))
	}
	n := max(tc.Parallelism, 1)
	for i := tc.Subtask; i < len(all); i += n {
		s.files = append(s.files, all[i])
	}
	return nil
}

// fileContext is the task context of a source reading one whole file: as
// the only subtask, sharing nothing.
func (s *dirSource) fileContext() *exec.TaskContext {
	tc := *s.tc
	tc.Subtask, tc.Parallelism, tc.Colocated = 0, 1, nil
	return &tc
}

// Run reads the files one after the other.
func (s *dirSource) Run(ctx context.Context, out exec.Collector) error {
	for s.next < len(s.files) {
		cfg := s.cfg
		cfg.path, cfg.dir = s.files[s.next], false
		src := newSource(cfg)
		if err := src.Open(ctx, s.fileContext()); err != nil {
			src.Close()
			return err
		}
		if s.restored != nil {
			err := src.RestoreState(ctx, s.restored)
			s.restored = nil
			if err != nil {
				src.Close()
				return err
			}
		}
		s.swap(src, s.next)
		err := src.Run(ctx, out)
		if err != nil {
			return err
		}
		s.swap(nil, s.next+1)
		if err := src.Close(); err != nil {
			return err
		}
	}
	return nil
}

// swap makes src, reading file next, the current source, under the
// checkpoint lock.
func (s *dirSource) swap(src *source, next int) {
	if s.lock != nil {
		s.lock.Lock()
		defer s.lock.Unlock()
	}
	s.cur, s.next = src, next
}

// Close closes the file being read; it is safe to call twice.
func (s *dirSource) Close() error {
	if s.cur == nil {
		return nil
	}
	err := s.cur.Close()
	s.cur = nil
	return err
}

// dirStateVersion is the version of dirState's encoding.
const dirStateVersion = 1

// dirState is what a directory source's SnapshotState returns, as JSON.
type dirState struct {
	Version int    `json:"version"`
	Path    string `json:"path"`
	// Next is the index in the subtask's share of the file it reads (or
	// reads next), File that file's path, and Offset the state of its
	// source (sourceState), null before the file was opened.
	Next   int             `json:"next"`
	File   string          `json:"file,omitempty"`
	Offset json.RawMessage `json:"offset,omitempty"`
}

// SnapshotState returns the file being read and the position in it. While
// Run runs, the task's checkpoint lock should be held.
func (s *dirSource) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	st := dirState{Version: dirStateVersion, Path: s.cfg.path, Next: s.next}
	if s.next < len(s.files) {
		st.File = s.files[s.next]
	}
	if s.cur != nil {
		var err error
		if st.Offset, err = s.cur.SnapshotState(ctx, checkpoint); err != nil {
			return nil, err
		}
	}
	return json.Marshal(st)
}

// RestoreState makes Run read on from the file and position in data. The
// subtask's share of files must be the one it had: files committed since
// (or removed) fail the restore.
func (s *dirSource) RestoreState(ctx context.Context, data []byte) error {
	var st dirState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("file: restoring the source of %s: %w", s.cfg.path, err)
	}
	switch {
	case st.Version != dirStateVersion:
		return fmt.Errorf("file: restoring the source of %s: state version %d, this release reads version %d", s.cfg.path, st.Version, dirStateVersion)
	case st.Path != s.cfg.path:
		return fmt.Errorf("file: restoring the source of %s: the state is of %s", s.cfg.path, st.Path)
	case st.Next < 0 || st.Next > len(s.files) || st.Next < len(s.files) && st.File != s.files[st.Next]:
		return fmt.Errorf("file: restoring the source of %s: its files changed since the checkpoint (file %d of this subtask was %q)", s.cfg.path, st.Next, st.File)
	}
	s.next, s.restored = st.Next, nil
	if len(st.Offset) > 0 && string(st.Offset) != "null" {
		s.restored = st.Offset
	}
	return nil
}

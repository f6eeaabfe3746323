// Package table keeps the tables Hummer stores itself (CREATE TABLE without an
// ENGINE, or ENGINE=hummer): a Store of durable, columnar tables in the data
// directory, written by statements (INSERT, UPDATE, DELETE, TRUNCATE), and the
// source that scans them.
//
// # Storage
//
// A table is a directory of immutable Arrow IPC files ("segments", each a few
// record batches of up to BatchRows rows) and of numbered versions, small JSON
// files each listing the segments that make up the table at that version:
//
//	<root>/<id>/s-00000001.arrow ...
//	<root>/<id>/v-00000001.json ...
//
// A statement writes its new segments, fsyncs them, and commits by renaming
// the next version file into place (then fsyncing the directory): the rename
// is the commit point, so after a crash a table is at its last renamed
// version, with every statement that returned and nothing of one that did
// not. Readers scan a pinned version, which no later write changes, so a
// query sees one snapshot however many statements commit while it runs.
// Writers of a table are serialised (Store.Begin holds the table's lock until
// Commit or Rollback), so no write is lost.
//
// Why Arrow IPC files and not pebble: Hummer's reads are scans into Arrow
// batches, and a segment is already that layout: a scan reads a file and hands
// its buffers to the operators without decoding a row (pebble would turn every
// scan into a per-row decode). Writes are whole statements, which suit
// immutable files; an UPDATE or DELETE rewrites the segments it changes
// (copy-on-write), and many small INSERTs are merged into bigger segments as
// they accumulate. A keyed table keeps its primary keys in memory to enforce
// uniqueness; point lookups on disk are what this layout gives up.
//
// The source reads segment files by their path, which the planner puts in the
// table's URL together with the pinned version: TaskManagers in other
// processes read them as they read a file table, so they must reach the data
// directory's filesystem.
package table

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
)

// Name is the connector's ENGINE name.
const Name = "hummer"

// Spec describes the connector. Its URL is written by the engine, not by users:
// CREATE TABLE gives a table its own.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "hummer://<table id> (assigned by CREATE TABLE)",
		Description: "A table Hummer stores in its data directory: written by INSERT, UPDATE, DELETE and COPY, read as a bounded source of its rows.",
		Source:      true,
	}
}

// Validate checks a table at CREATE TABLE time: its URL, if set, must be one
// the engine assigned.
func Validate(c exec.ConnectorSpec) error {
	if c.URL == "" {
		return nil
	}
	if _, err := parseURL(c.URL); err != nil {
		return err
	}
	return nil
}

// Register adds the table source to r.
func Register(r *exec.Registry) {
	r.RegisterSource(Name, func(c exec.ConnectorSpec) (exec.Source, error) {
		loc, err := parseURL(c.URL)
		if err != nil {
			return nil, err
		}
		if loc.dir == "" || loc.version == 0 {
			return nil, fmt.Errorf("%w: table URL %q has no pinned version (the planner pins one)", spec.ErrBadOption, c.URL)
		}
		return &source{loc: loc, spec: c}, nil
	})
}

// location is a parsed table URL: hummer://<id>, or, as the planner rewrites
// it for a scan, hummer://<id>?dir=<table directory>&version=<n>.
type location struct {
	id      string
	dir     string
	version int64
}

func parseURL(u string) (location, error) {
	rest, ok := strings.CutPrefix(u, "hummer://")
	if !ok {
		return location{}, fmt.Errorf("%w: table URL %q: want hummer://<id>", spec.ErrBadOption, u)
	}
	id, query, _ := strings.Cut(rest, "?")
	if !validID(id) {
		return location{}, fmt.Errorf("%w: table URL %q: bad table id", spec.ErrBadOption, u)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return location{}, fmt.Errorf("%w: table URL %q: %v", spec.ErrBadOption, u, err)
	}
	loc := location{id: id, dir: q.Get("dir")}
	if v := q.Get("version"); v != "" {
		if loc.version, err = strconv.ParseInt(v, 10, 64); err != nil || loc.version <= 0 {
			return location{}, fmt.Errorf("%w: table URL %q: bad version", spec.ErrBadOption, u)
		}
	}
	return loc, nil
}

// URL returns the URL of table id, as the catalog keeps it.
func URL(id string) string { return "hummer://" + id }

// ID returns the table id of a table URL.
func ID(u string) (string, error) {
	loc, err := parseURL(u)
	return loc.id, err
}

// validID accepts the ids NewID makes: letters, digits, '_' and '-'.
func validID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// source scans one pinned version of a table: subtask i of n reads record
// batches i, i+n, i+2n, ... of the version's segments in order, projected.
type source struct {
	loc  location
	spec exec.ConnectorSpec
	// segments are the version's files; share the global batch indexes this
	// subtask reads.
	segments []string
	subtask  int
	n        int
	out      *arrow.Schema
	cols     []int
	alloc    memory.Allocator
}

var _ exec.Source = (*source)(nil)

func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	v, err := readVersion(s.loc.dir, s.loc.version)
	if err != nil {
		return fmt.Errorf("%w: table %s: %w", exec.ErrBadInput, s.loc.id, err)
	}
	for _, seg := range v.Segments {
		s.segments = append(s.segments, filepath.Join(s.loc.dir, seg.File))
	}
	s.subtask, s.n = tc.Subtask, max(tc.Parallelism, 1)
	s.alloc = tc.Alloc
	if s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	s.cols = s.spec.Columns
	if s.cols == nil {
		s.cols = make([]int, len(s.spec.Schema))
		for i := range s.cols {
			s.cols[i] = i
		}
	}
	full := s.spec.Schema.Arrow()
	fields := make([]arrow.Field, len(s.cols))
	for i, c := range s.cols {
		if c < 0 || c >= len(s.spec.Schema) {
			return fmt.Errorf("table: projected column %d out of range for %d columns", c, len(s.spec.Schema))
		}
		fields[i] = full.Field(c)
	}
	s.out = arrow.NewSchema(fields, nil)
	return nil
}

// Run emits this subtask's batches, each read from its segment file into
// memory of the task's allocator (the page cache makes that a copy; the
// batches a subtask skips are not read at all).
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	next := 0 // the global index of the first batch of the current segment
	for _, path := range s.segments {
		n, err := s.segment(ctx, path, next, out)
		if err != nil {
			return err
		}
		next += n
	}
	return nil
}

// segment emits this subtask's batches of one segment, whose first batch has
// global index first; it returns the segment's number of batches.
func (s *source) segment(ctx context.Context, path string, first int, out exec.Collector) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	bad := func(err error) error {
		return fmt.Errorf("%w: table %s: segment %s: %w", exec.ErrBadInput, s.loc.id, filepath.Base(path), err)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, bad(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(s.alloc))
	if err != nil {
		return 0, bad(err)
	}
	defer r.Close()
	n := r.NumRecords()
	for i := (s.subtask - first%s.n + s.n) % s.n; i < n; i += s.n {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return 0, bad(err)
		}
		cols := make([]arrow.Array, len(s.cols))
		for j, c := range s.cols {
			cols[j] = rec.Column(c)
		}
		proj := array.NewRecordBatch(s.out, cols, rec.NumRows())
		rec.Release()
		err = out.Collect(ctx, exec.Batch{Rec: proj})
		proj.Release()
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (s *source) Close() error { return nil }

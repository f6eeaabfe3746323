// Package table keeps the tables Hummer stores itself (CREATE TABLE without an
// ENGINE, or ENGINE=hummer): a Store of durable, columnar tables in the data
// directory, written by statements (INSERT, UPDATE, DELETE, TRUNCATE), and the
// source that scans them.
//
// # Storage
//
// A table is a directory of immutable Arrow IPC files ("segments", each a few
// record batches of up to BatchRows rows), of numbered versions, small JSON
// files each listing the segments that make up the table at that version, and
// of a write-ahead log that the version names with the offset its rows start
// at:
//
//	<root>/<id>/s-00000001.arrow ...
//	<root>/<id>/v-00000001.json ...
//	<root>/<id>/w-00000001.log
//
// A small statement (an INSERT or COPY whose rows fit in one record batch, the
// common OLTP write) commits by appending its rows to the log as one record
// and fsyncing it: one fsync, shared by the statements of concurrent sessions
// that commit together (group commit, group.go), as PostgreSQL's commits
// share a WAL flush. Writing a segment instead costs four (the file, its
// directory entry, the version file and its entry) and a file per statement.
// When the log holds enough records a background fold writes its rows as a
// segment and commits a version file that names it and a new log (wal.go),
// so that the log stays small: scans read it whole, and a restart replays it
// by reading it once. A bigger statement writes segments (its rows are
// written once, as a bulk load should be, not once to a log and again to a
// segment) and commits by renaming the next version file into place (then
// fsyncing the directory). So does an UPDATE, a DELETE or a sink's upsert: it
// names the rows it removes by their row ids and rewrites only the segments
// that hold them (change.go), and the log's rows if it removes one of them
// (its version's log then starts where the log ends); TRUNCATE and DELETE
// without WHERE commit an empty table. These statements write segments rather
// than log records because what they change is segments: a logged delete
// would have every scan apply it until a fold, and a segment they rewrite
// must be fsynced before the version that names it either way. Either way a commit is one atomic step (a record whose
// checksum holds, or a rename): after a crash a table is at its last version
// file plus the whole records of its log, with every statement that returned
// and nothing of one that did not; a torn record at the log's end is cut off.
// Readers scan a pinned version, the segments of a version file and the log
// up to an offset, which no later write changes, so a query sees one
// snapshot, log-only rows included, however many statements commit while it
// runs. Writers of a table are serialised (Store.Begin holds the table's lock
// until Commit or Rollback), so no write is lost.
//
// Why Arrow IPC files and not pebble: Hummer's reads are scans into Arrow
// batches, and a segment is already that layout: a scan reads a file and hands
// its buffers to the operators without decoding a row (pebble would turn every
// scan into a per-row decode). Writes are whole statements, which suit
// immutable files; an UPDATE or DELETE rewrites the segments it changes
// (copy-on-write), and many small INSERTs are merged into bigger segments as
// they accumulate. A keyed table keeps its primary keys in memory to enforce
// uniqueness; a lookup by a bigint or timestamp key reads segments through
// key indexes built when first needed (lookup.go).
//
// The source reads segment files by their path, which the planner puts in the
// table's URL together with the pinned version: TaskManagers in other
// processes read them as they read a file table, so they must reach the data
// directory's filesystem.
//
// # Sink
//
// A continuous job writes into a table through its sink (sink.go), exactly
// once under the job's checkpoints: each checkpoint's changes commit as one
// statement per sink subtask, which the table's version records for that
// subtask, so a commit replayed after a failure changes nothing. Only the
// process holding the Store commits: beside it (hummer serve) the sink
// itself, when it hears a checkpoint complete; on a cluster, whose
// TaskManagers have no store, the sink keeps its uncommitted changes in its
// checkpoint state and the JobManager's process commits that state
// (Store.CommitSink) when the checkpoint completes, before the tasks hear
// so, and before a job restored from it runs on.
package table

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

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
		Description: "A table Hummer stores in its data directory: written by INSERT, UPDATE, DELETE and COPY, read as a bounded source of its rows; a continuous job's sink, upserting by its PRIMARY KEY.",
		Source:      true,
		Sink:        true,
		Upsert:      true,
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

// ChangesName is the ENGINE under which a scan follows a table's changes (a
// view over the table): an unbounded source of the table's rows, then of the
// inserts and deletes of every later commit.
const ChangesName = "hummer_changes"

// ChangesSpec describes the changes connector, which the engine uses for views
// over stored tables; no table is created with it.
func ChangesSpec() *spec.Connector {
	return &spec.Connector{
		Name:        ChangesName,
		URL:         "hummer://<table id>?follow=1 (set by the engine for a view over a table it stores)",
		Description: "A stored table's rows, then the inserts and deletes of every later statement: what a view over the table reads.",
		Source:      true,
		Unbounded:   true,
	}
}

// Register adds the table source to r, under both names, and the staging
// sink: what a TaskManager without the store runs (sink.go); the engine
// that holds the store replaces it with its sink (RegisterSink).
func Register(r *exec.Registry) {
	r.RegisterSource(Name, sourceFactory(nil))
	r.RegisterSource(ChangesName, sourceFactory(nil))
	r.RegisterSink(Name, sinkFactory(nil))
}

// sourceFactory makes sources of table scans; with store (the process's
// own), a following scan registers as a follower of its table
// (Store.Follow) while it runs, which a view's job resumed after a restart
// needs: no session registered it.
func sourceFactory(store *Store) exec.SourceFactory {
	return func(c exec.ConnectorSpec) (exec.Source, error) {
		loc, err := parseURL(c.URL)
		if err != nil {
			return nil, err
		}
		if loc.dir == "" || loc.version == 0 {
			return nil, fmt.Errorf("%w: table URL %q has no pinned version (the planner pins one)", spec.ErrBadOption, c.URL)
		}
		return &source{loc: loc, spec: c, store: store}, nil
	}
}

// location is a parsed table URL: hummer://<id>, or, as the planner rewrites
// it for a scan, hummer://<id>?dir=<table directory>&version=<n>[&follow=1],
// or as a job's sink writes it, hummer://<id>?sink=<run> (SinkURL).
type location struct {
	id      string
	dir     string
	version int64
	follow  bool   // after the version's rows, its changes (changes.go)
	sink    string // the run a sink's URL names (SinkURL)
	// file is the version file of its segments and log, and logEnd the end
	// of its log's records (wal.go).
	file, logEnd int64
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
	loc := location{id: id, dir: q.Get("dir"), follow: q.Get("follow") == "1", sink: q.Get("sink")}
	for _, p := range []struct {
		name string
		to   *int64
	}{{"version", &loc.version}, {"file", &loc.file}, {"logend", &loc.logEnd}} {
		if v := q.Get(p.name); v != "" {
			if *p.to, err = strconv.ParseInt(v, 10, 64); err != nil || *p.to < 0 {
				return location{}, fmt.Errorf("%w: table URL %q: bad %s", spec.ErrBadOption, u, p.name)
			}
		}
	}
	if loc.file == 0 {
		loc.file = loc.version
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

// Package connectors gathers Hummer's sources and sinks. Each connector is a folder
// with one registration point, a spec of its options (connectors/spec) that CREATE
// TABLE validates, and its own tests; this package registers them all explicitly
// and validates a table against the connector its ENGINE names.
package connectors

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hummer-db/hummer/connectors/blackhole"
	"github.com/hummer-db/hummer/connectors/file"
	"github.com/hummer-db/hummer/connectors/kafka"
	"github.com/hummer-db/hummer/connectors/memory"
	"github.com/hummer-db/hummer/connectors/nexmark"
	"github.com/hummer-db/hummer/connectors/socket"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/connectors/table"
	"github.com/hummer-db/hummer/exec"
)

// ConnectorInfo describes a connector and its options, for docs and SHOW.
type ConnectorInfo = spec.Connector

// connector is one entry of the table of connectors.
type connector struct {
	spec     *spec.Connector
	validate func(exec.ConnectorSpec) error
	// maxParallelism, if set, caps the parallelism of the connector's source.
	maxParallelism func(exec.ConnectorSpec) int
}

func all() []connector {
	return []connector{
		{spec: file.Spec(), validate: file.Validate, maxParallelism: file.MaxParallelism},
		{spec: kafka.Spec(), validate: kafka.Validate},
		{spec: memory.Spec(), validate: memory.Validate},
		{spec: nexmark.Spec(), validate: nexmark.Validate},
		{spec: blackhole.Spec(), validate: blackhole.Validate},
		{spec: socket.Spec(), validate: socket.Validate, maxParallelism: socket.MaxParallelism},
		{spec: table.Spec(), validate: table.Validate},
		{spec: table.ChangesSpec(), validate: refuseChanges},
	}
}

// refuseChanges refuses CREATE TABLE ... ENGINE=hummer_changes: the engine
// uses that connector itself, for views over the tables it stores.
func refuseChanges(exec.ConnectorSpec) error {
	return fmt.Errorf("%w: ENGINE=%s is how a view reads a stored table's changes, not a table's engine (leave ENGINE out to make a table Hummer stores)", spec.ErrBadOption, table.ChangesName)
}

// Register adds every connector's source and sink to r. It returns the store the
// memory connector's tables live in, so that the caller (a test, say) can put
// input there and read what jobs wrote.
func Register(r *exec.Registry) *memory.Store {
	file.Register(r)
	kafka.Register(r)
	table.Register(r)
	nexmark.Register(r)
	blackhole.Register(r)
	socket.Register(r)
	store := memory.NewStore()
	memory.Register(r, store)
	return store
}

// Validate checks a table's connector at CREATE TABLE time: that the ENGINE names a
// connector (exec.ErrUnknownConnector otherwise) and that the CONNECTION URL, its
// options and the table's columns suit it (ErrBadOption otherwise). ENGINE names
// are lower case, as the registry knows them.
func Validate(c exec.ConnectorSpec) error {
	var names []string
	for _, k := range all() {
		if k.spec.Name == c.Connector {
			return k.validate(c)
		}
		names = append(names, k.spec.Name)
	}
	return fmt.Errorf("%w: %q (connectors: %s)", exec.ErrUnknownConnector, c.Connector, strings.Join(names, ", "))
}

// ValidateLocal is Validate for a process whose own tasks read the tables it
// creates (hummer serve, hummer sql): it also checks that a file table's file
// is there to read (file.CheckFile), so that CREATE TABLE over a missing file
// fails at once with 58P01 rather than every later query over it.
func ValidateLocal(c exec.ConnectorSpec) error {
	if err := Validate(c); err != nil {
		return err
	}
	if c.Connector == file.Name {
		return file.CheckFile(c)
	}
	return nil
}

// EstimateRows estimates a table's rows for the planner's join order: a
// stream's are infinite; a file's from its size (file.EstimateRows); other
// connectors' are not known.
func EstimateRows(c exec.ConnectorSpec) (float64, bool) {
	switch {
	case Unbounded(c.Connector, c.URL):
		return math.Inf(1), true
	case c.Connector == nexmark.Name:
		return nexmark.EstimateRows(c)
	case c.Connector == file.Name:
		return file.EstimateRows(c)
	}
	return 0, false
}

// EstimateDistinct estimates the distinct values of a table's column, for the
// planner's join order: a file's from its first lines (file.EstimateDistinct);
// other connectors' are not known.
func EstimateDistinct(c exec.ConnectorSpec, col int) (float64, bool) {
	if c.Connector == file.Name {
		return file.EstimateDistinct(c, col)
	}
	return 0, false
}

// Unbounded reports whether the source of a table of the connector, at that
// CONNECTION URL, never ends by itself: a Kafka or socket table's, or a
// Nexmark table's without events=N.
func Unbounded(connector, url string) bool {
	if connector == nexmark.Name {
		return !nexmark.Bounded(exec.ConnectorSpec{Connector: connector, URL: url})
	}
	for _, k := range all() {
		if k.spec.Name == connector {
			return k.spec.Unbounded
		}
	}
	return false
}

// InsertWaits reports whether a bounded INSERT into a table of the connector
// returns when its rows are written, with their number: the memory
// connector's, whose tables are in this process, as a stored table's.
func InsertWaits(connector string) bool { return connector == memory.Name }

// SourceWatermarks reports whether the connector's source keeps a table's
// watermarks itself: Kafka's, one per partition.
func SourceWatermarks(connector string) bool { return connector == kafka.Name }

// Retracts reports whether the connector's source emits deletes of rows it
// emitted before (the changes of a stored table), which the planner must
// treat as updates.
func Retracts(connector string) bool { return connector == table.ChangesName }

// Upsert reports whether the connector's sink upserts by a table's PRIMARY KEY.
func Upsert(connector string) bool {
	for _, k := range all() {
		if k.spec.Name == connector {
			return k.spec.Upsert
		}
	}
	return false
}

// MaxParallelism returns the most subtasks a source of the table can usefully
// have (for JobVertex.MaxParallelism), or 0 for no limit. A file table in
// format=csv gives 1: its records cannot be split by byte ranges.
func MaxParallelism(c exec.ConnectorSpec) int {
	for _, k := range all() {
		if k.spec.Name == c.Connector && k.maxParallelism != nil {
			return k.maxParallelism(c)
		}
	}
	return 0
}

// Describe lists the connectors and their options, sorted by name.
func Describe() []ConnectorInfo {
	var infos []ConnectorInfo
	for _, k := range all() {
		infos = append(infos, *k.spec)
	}
	slices.SortFunc(infos, func(a, b ConnectorInfo) int { return strings.Compare(a.Name, b.Name) })
	return infos
}

// Package memory is the memory connector: named in-process tables of Arrow
// batches held in a Store, for tests and examples.
//
//	CREATE TABLE t (a BIGINT, b TEXT) ENGINE=memory CONNECTION='memory://t';
//
// As a source it reads the batches the table held when the source was made
// (subtask i of n takes batches i, i+n, i+2n, ...; none of a table nothing has
// written), change kinds included, so a test can feed a changelog. As a sink it appends every batch it receives, so a test can
// read what a job wrote.
package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// Name is the connector's ENGINE name.
const Name = "memory"

// Spec describes the memory connector; it has no options.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "memory://<name>",
		Description: "A named in-process table of Arrow batches, for tests: a bounded source of what it holds and a sink that appends.",
		Source:      true,
		Sink:        true,
	}
}

// Register adds the memory source and sink, both over store, to r.
func Register(r *exec.Registry, store *Store) {
	r.RegisterSource(Name, func(c exec.ConnectorSpec) (exec.Source, error) {
		name, cols, err := parse(c)
		if err != nil {
			return nil, err
		}
		// A TaskManager makes all its tasks of a job before it runs any:
		// what the table holds now is what the statement reads, as in
		// SQL, not what the job's own sink appends to it.
		return &source{store: store, name: name, schema: c.Schema, cols: cols, snap: store.mark(name)}, nil
	})
	r.RegisterSink(Name, func(c exec.ConnectorSpec) (exec.Operator, error) {
		name, _, err := parse(c)
		if err != nil {
			return nil, err
		}
		return &sink{store: store, name: name, schema: c.Schema}, nil
	})
}

// Validate checks a memory table at CREATE TABLE time: the URL names a table and
// sets no options. Errors wrap spec.ErrBadOption.
func Validate(c exec.ConnectorSpec) error {
	_, _, err := parse(c)
	return err
}

func parse(c exec.ConnectorSpec) (name string, cols []int, err error) {
	s := Spec()
	rest, ok := strings.CutPrefix(c.URL, "memory://")
	if !ok {
		return "", nil, s.Errorf("URL %q: want %s", c.URL, s.URL)
	}
	name, query, _ := strings.Cut(rest, "?")
	if name == "" || strings.Contains(name, "/") {
		return "", nil, s.Errorf("URL %q: want %s with a name without '/'", c.URL, s.URL)
	}
	q, err := spec.ParseQuery(query)
	if err != nil {
		return "", nil, err
	}
	if _, err := s.Parse(q); err != nil {
		return "", nil, err
	}
	cols = c.Columns
	if cols == nil {
		cols = make([]int, len(c.Schema))
		for i := range cols {
			cols[i] = i
		}
	}
	for _, col := range cols {
		if col < 0 || col >= len(c.Schema) {
			return "", nil, fmt.Errorf("memory: projected column %d out of range for %d columns", col, len(c.Schema))
		}
	}
	return name, cols, nil
}

// source emits its share of a table's batches, projected.
type source struct {
	store   *Store
	name    string
	schema  types.Schema // the table's columns as declared
	cols    []int
	snap    snapshot // the table when the source was made
	out     *arrow.Schema
	batches []exec.Batch // retained at Open, released as emitted
}

var _ exec.Source = (*source)(nil)

// Open takes this subtask's share of the table's batches. A table nothing
// has written yet is empty, as a new table is in SQL.
func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	batches, schema, ok := s.store.share(s.name, tc.Subtask, max(tc.Parallelism, 1), s.snap)
	s.batches = batches
	if ok && !sameTypes(schema, s.schema) {
		return fmt.Errorf("%w: memory table %s is %v, declared %v", exec.ErrBadInput, s.name, schema, s.schema)
	}
	fields := make([]arrow.Field, len(s.cols))
	for i, c := range s.cols {
		fields[i] = arrow.Field{Name: s.schema[c].Name, Type: s.schema[c].Type.Arrow(), Nullable: true}
	}
	s.out = arrow.NewSchema(fields, nil)
	return nil
}

// Run emits the batches; it returns nil after the last.
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	for len(s.batches) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := s.batches[0]
		s.batches = s.batches[1:]
		cols := make([]arrow.Array, len(s.cols))
		for i, c := range s.cols {
			cols[i] = b.Rec.Column(c)
		}
		rec := array.NewRecordBatch(s.out, cols, b.Rec.NumRows())
		b.Rec.Release()
		err := out.Collect(ctx, exec.Batch{Rec: rec, Ops: b.Ops})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// Close releases the batches not emitted; it is safe to call twice.
func (s *source) Close() error {
	for _, b := range s.batches {
		b.Rec.Release()
	}
	s.batches = nil
	return nil
}

// sink appends what it receives to a table, creating it at Open if needed.
type sink struct {
	store  *Store
	name   string
	schema types.Schema
}

var _ exec.Operator = (*sink)(nil)

func (k *sink) Open(ctx context.Context, tc *exec.TaskContext) error {
	return k.store.Create(k.name, k.schema)
}

func (k *sink) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	return k.store.Append(k.name, k.schema, b)
}

// ProcessSignal forwards signals: the sink consumes none of them.
func (k *sink) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if out == nil {
		return nil
	}
	return out.CollectSignal(ctx, s)
}

func (k *sink) Close(ctx context.Context) error { return nil }

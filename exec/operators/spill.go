package operators

// Spill files, shared by the operators that spill to disk past their memory
// budget (SET work_mem): hash aggregation and hash join write rows
// partitioned by the hash of their keys (partitionedSpill), as DuckDB and
// PostgreSQL 13+ do; sort writes sorted runs (one spillFile each).
//
// A spill file is an Arrow IPC stream of an input's rows with their change
// kinds as one more column ("$op"). Files live in a directory of their own
// under the task's SpillDir, removed with the operator's spill.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

const (
	// spillBits of the keys' hash choose a row's partition: 16 files.
	spillBits  = 4
	spillParts = 1 << spillBits
	// maxSpillLevel is how many times a partition is split again; past it
	// (a key too big for the budget on its own) it is processed in memory.
	maxSpillLevel = 8
)

// spillDir is where an operator of task tc spills: the task's SpillDir, or
// the system's temporary directory.
func spillDir(tc *exec.TaskContext) string {
	if tc != nil && tc.SpillDir != "" {
		return tc.SpillDir
	}
	return os.TempDir()
}

// spillBudget is an operator's memory budget: its config's limit (-1: none),
// else the task's WorkMem; 0 means none.
func spillBudget(limit int64, tc *exec.TaskContext) int64 {
	switch {
	case limit < 0:
		return 0
	case limit > 0:
		return limit
	case tc != nil:
		return tc.WorkMem
	}
	return 0
}

// spillFile is one spill file being written, then read back.
type spillFile struct {
	what   string // the operator's kind, for errors
	f      *os.File
	w      *ipc.Writer
	schema *arrow.Schema // the input's, plus "$op"
	rows   int64
}

// newSpillFile creates a spill file in dir for rows of schema in.
func newSpillFile(what, dir, pattern string, in *arrow.Schema, mem memory.Allocator) (*spillFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: spilling to disk: %w", what, err)
	}
	fields := append(in.Fields(), arrow.Field{Name: "$op", Type: arrow.PrimitiveTypes.Int8})
	schema := arrow.NewSchema(fields, nil)
	return &spillFile{what: what, f: f, schema: schema, w: ipc.NewWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem))}, nil
}

// write appends rec's rows with their change kinds (ops, nil for inserts).
func (s *spillFile) write(mem memory.Allocator, rec arrow.RecordBatch, ops []exec.ChangeKind) error {
	n := int(rec.NumRows())
	ob := array.NewInt8Builder(mem)
	ob.Reserve(n)
	for i := range n {
		op := exec.Insert
		if ops != nil {
			op = ops[i]
		}
		ob.UnsafeAppend(int8(op))
	}
	opCol := ob.NewArray()
	ob.Release()
	defer opCol.Release()
	cols := append(append(make([]arrow.Array, 0, rec.NumCols()+1), rec.Columns()...), opCol)
	withOps := array.NewRecordBatch(s.schema, cols, int64(n))
	defer withOps.Release()
	if err := s.w.Write(withOps); err != nil {
		return fmt.Errorf("%s: spilling to disk: %w", s.what, err)
	}
	s.rows += int64(n)
	return nil
}

// finish ends the writing; the file can then be read.
func (s *spillFile) finish() error {
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("%s: spilling to disk: %w", s.what, err)
	}
	return nil
}

// reader opens the finished file from its start, to read its batches in the
// order written.
func (s *spillFile) reader(mem memory.Allocator) (*spillReader, error) {
	if _, err := s.f.Seek(0, 0); err != nil {
		return nil, fmt.Errorf("%s: reading back a spill file: %w", s.what, err)
	}
	r, err := ipc.NewReader(s.f, ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%s: reading back a spill file: %w", s.what, err)
	}
	return &spillReader{what: s.what, r: r}, nil
}

// read hands take each batch of the file, in the order written; take borrows
// the batch.
func (s *spillFile) read(mem memory.Allocator, take func(exec.Batch) error) error {
	r, err := s.reader(mem)
	if err != nil {
		return err
	}
	defer r.close()
	for {
		b, ok, err := r.next()
		if err != nil || !ok {
			return err
		}
		err = take(b)
		b.Rec.Release()
		if err != nil {
			return err
		}
	}
}

// close closes the file (its directory's removal deletes it).
func (s *spillFile) close() {
	s.w.Close()
	s.f.Close()
}

// spillReader reads a spill file's batches back.
type spillReader struct {
	what string
	r    *ipc.Reader
}

// next returns the next batch, owned by the caller, or false at the end.
func (r *spillReader) next() (exec.Batch, bool, error) {
	if !r.r.Next() {
		if err := r.r.Err(); err != nil {
			return exec.Batch{}, false, fmt.Errorf("%s: reading back a spill file: %w", r.what, err)
		}
		return exec.Batch{}, false, nil
	}
	b, err := splitOps(r.r.RecordBatch())
	return b, err == nil, err
}

func (r *spillReader) close() { r.r.Release() }

// splitOps turns a spilled record back into a batch: its last column holds
// the change kinds (nil when all are inserts).
func splitOps(rec arrow.RecordBatch) (exec.Batch, error) {
	nc := int(rec.NumCols())
	opCol, ok := rec.Column(nc - 1).(*array.Int8)
	if !ok {
		return exec.Batch{}, errors.New("a spill file without its change kinds")
	}
	var ops []exec.ChangeKind
	for i, v := range opCol.Int8Values() {
		// The rows before the first that is not an insert are inserts (0).
		if v != int8(exec.Insert) && ops == nil {
			ops = make([]exec.ChangeKind, opCol.Len())
		}
		if ops != nil {
			ops[i] = exec.ChangeKind(v)
		}
	}
	fields := rec.Schema().Fields()[:nc-1]
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), rec.Columns()[:nc-1], rec.NumRows())
	return exec.Batch{Rec: out, Ops: ops}, nil
}

// partitionedSpill writes rows to spillParts files by the hash of their keys,
// so that every row of one key lands in one partition.
type partitionedSpill struct {
	what   string
	dir    string
	level  int // which bits of the hash choose the partition
	parts  [spillParts]*spillFile
	hashes []uint64
	idx    [spillParts][]int32
}

// newPartitionedSpill makes a spill in a fresh directory under parent, at
// level levels of partitioning down.
func newPartitionedSpill(what, parent string, level int) (*partitionedSpill, error) {
	dir, err := os.MkdirTemp(parent, "hummer-"+what+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: spilling to disk: %w", what, err)
	}
	return &partitionedSpill{what: what, dir: dir, level: level}, nil
}

// write appends the rows of rec (with change kinds ops, nil for inserts) to
// their partitions, by the hash of columns keys.
func (s *partitionedSpill) write(mem memory.Allocator, rec arrow.RecordBatch, ops []exec.ChangeKind, keys []int) error {
	n := int(rec.NumRows())
	s.hashes = vector.GrowSlice(s.hashes, n)
	if err := vector.HashRows(rec, keys, s.hashes); err != nil {
		return err
	}
	// The top bits first: the low ones chose the subtask (exchange.go).
	shift := 64 - spillBits*(s.level+1)
	for p := range s.idx {
		s.idx[p] = s.idx[p][:0]
	}
	for i, h := range s.hashes {
		p := (h >> shift) & (spillParts - 1)
		s.idx[p] = append(s.idx[p], int32(i))
	}
	for p, idx := range s.idx {
		if len(idx) == 0 {
			continue
		}
		if s.parts[p] == nil {
			f, err := newSpillFile(s.what, s.dir, fmt.Sprintf("part%02d-*.arrows", p), rec.Schema(), mem)
			if err != nil {
				return err
			}
			s.parts[p] = f
		}
		sub, err := vector.GatherRecord(mem, rec, idx)
		if err != nil {
			return err
		}
		err = s.parts[p].write(mem, sub, vector.GatherOps(ops, idx))
		sub.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// finish closes the partitions' writers and returns each partition's file,
// nil for those without rows.
func (s *partitionedSpill) finish() ([spillParts]*spillFile, error) {
	var out [spillParts]*spillFile
	for p, part := range s.parts {
		if part == nil {
			continue
		}
		if err := part.finish(); err != nil {
			return out, err
		}
		if part.rows > 0 {
			out[p] = part
		}
	}
	return out, nil
}

// remove deletes the spill files and their directory.
func (s *partitionedSpill) remove() {
	for _, part := range s.parts {
		if part != nil {
			part.close()
		}
	}
	os.RemoveAll(s.dir)
}

// signalSwallower passes a child operator's rows on, not its end of stream:
// the parent forwards its own.
type signalSwallower struct{ exec.Collector }

func (signalSwallower) CollectSignal(context.Context, exec.Signal) error { return nil }

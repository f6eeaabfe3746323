package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// A batch the source emits holds BatchRows rows or about BatchBytes bytes of
// input, whichever comes first (a single longer line makes a batch of its own).
// 64 KiB keeps a batch and what the operators of its chain derive from it
// (lower-cased copy, split words, offsets, hashes) within the L2 cache; measured
// with BenchmarkWordCount in cmd/hummer, 1 MiB batches cost about 15% more CPU.
const (
	BatchRows  = 4096
	BatchBytes = 1 << 16
)

// maxLoggedBadRecords is how many bad records a subtask logs one by one; the rest
// are only counted, so a file of garbage does not flood the log.
const maxLoggedBadRecords = 5

// source reads one subtask's share of a file.
type source struct {
	cfg     config
	out     types.Schema // the projected columns
	log     *slog.Logger
	metrics *exec.TaskMetrics
	alloc   memory.Allocator
	f       *os.File
	lr      *lineReader // nil when this subtask has nothing to read
	nbad    int64
	base    int64 // lines before the range, counted when first needed; -1 unknown
	counted bool
}

var _ exec.Source = (*source)(nil)

func newSource(cfg config) *source {
	out := make(types.Schema, len(cfg.cols))
	for i, c := range cfg.cols {
		out[i] = cfg.schema[c]
	}
	return &source{cfg: cfg, out: out}
}

// Open opens the file and positions this subtask at its byte range. A file that
// cannot be read fails with exec.ErrBadInput (and fs.ErrNotExist when missing).
func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	s.log = tc.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.metrics = tc.Metrics
	if s.metrics == nil {
		s.metrics = &exec.TaskMetrics{}
	}
	if s.alloc = tc.Alloc; s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	f, err := os.Open(s.cfg.path)
	if err != nil {
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // the message names the path once, below
		}
		return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
	}
	s.f = f
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: file %s: not a regular file", exec.ErrBadInput, s.cfg.path)
	}
	size := st.Size()
	n, i := int64(max(tc.Parallelism, 1)), int64(tc.Subtask)
	start, end := split(size, i, n), split(size, i+1, n)
	if s.cfg.format == FormatCSV {
		// Quoted fields may hold newlines, so a byte offset cannot tell where a
		// record starts: subtask 0 reads everything.
		if i != 0 {
			return nil
		}
		start, end = 0, size
	}
	s.lr, err = newLineReader(f, size, start, end, i > 0, readBlock)
	if err != nil {
		return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
	}
	return nil
}

// split returns i*size/n without overflowing for any file size.
func split(size, i, n int64) int64 { return size/n*i + size%n*i/n }

// Run reads the range and emits its rows; it returns nil at the end of the range.
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	if s.lr == nil {
		return nil
	}
	var err error
	switch s.cfg.format {
	case FormatText:
		err = s.runText(ctx, out)
	case FormatCSV:
		err = s.runCSV(ctx, out)
	case FormatJSON:
		err = s.runJSON(ctx, out)
	}
	if s.nbad > maxLoggedBadRecords {
		s.log.Warn("file: skipped bad records", "path", s.cfg.path, "count", s.nbad)
	}
	return err
}

// Close closes the file; it is safe to call twice.
func (s *source) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

func (s *source) readError(err error) error {
	return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
}

func (s *source) emit(ctx context.Context, out exec.Collector, rec arrow.RecordBatch) error {
	defer rec.Release()
	if err := ctx.Err(); err != nil {
		return err
	}
	return out.Collect(ctx, exec.Batch{Rec: rec})
}

// badRecord counts a skipped record and logs the first few with their line number
// (line is 1-based within this subtask's range).
func (s *source) badRecord(line int64, err error) {
	s.metrics.BadRecords.Add(1)
	s.nbad++
	if s.nbad > maxLoggedBadRecords {
		return
	}
	if !s.counted {
		s.counted = true
		if n, err := countLines(s.f, s.lr.first); err == nil {
			s.base = n
		} else {
			s.base = -1
		}
	}
	lineNo := int64(-1)
	if s.base >= 0 {
		lineNo = s.base + line
	}
	s.log.Warn("file: skipped a bad record", "path", s.cfg.path, "line", lineNo, "err", err)
	if s.nbad == maxLoggedBadRecords {
		s.log.Warn("file: further bad records are counted, not logged", "path", s.cfg.path)
	}
}

// runText emits each line as a row of the single TEXT column. This is the
// WordCount input path: lines are copied straight from the read buffer into the
// Arrow value buffer, with no per-line allocation.
func (s *source) runText(ctx context.Context, out exec.Collector) error {
	if len(s.out) == 0 {
		return s.runCount(ctx, out)
	}
	schema := s.out.Arrow()
	b := array.NewStringBuilder(s.alloc)
	defer b.Release()
	// Reserve what the previous batch used and a little more: zeroing a full
	// BatchBytes for batches that end at BatchRows short lines costs more than
	// reading them.
	estimate := BatchBytes
	reserve := func() {
		b.Reserve(BatchRows)
		b.ReserveData(int(min(int64(estimate), s.lr.remaining())))
	}
	flush := func() error {
		estimate = min(BatchBytes, b.DataLen()+b.DataLen()/8)
		col := b.NewArray()
		cols := make([]arrow.Array, len(s.out)) // a projection may repeat the column
		for i := range cols {
			cols[i] = col
		}
		rec := array.NewRecordBatch(schema, cols, int64(col.Len()))
		col.Release()
		return s.emit(ctx, out, rec)
	}
	reserve()
	for {
		line, ok, err := s.lr.next()
		if err != nil {
			return s.readError(err)
		}
		if !ok {
			break
		}
		if !utf8.Valid(line) {
			s.badRecord(s.lr.line, records.ErrInvalidUTF8)
			continue
		}
		if b.Len() > 0 && (b.Len() >= BatchRows || b.DataLen()+len(line) > BatchBytes) {
			if err := flush(); err != nil {
				return err
			}
			reserve()
		}
		b.BinaryBuilder.Append(line)
	}
	if b.Len() > 0 {
		return flush()
	}
	return nil
}

// runCount emits batches without columns, for a query that reads none (count(*)).
func (s *source) runCount(ctx context.Context, out exec.Collector) error {
	schema := arrow.NewSchema(nil, nil)
	rows, bytes := 0, 0
	for {
		line, ok, err := s.lr.next()
		if err != nil {
			return s.readError(err)
		}
		if ok {
			rows++
			bytes += len(line) + 1
		}
		if rows > 0 && (!ok || rows >= BatchRows || bytes >= BatchBytes) {
			if err := s.emit(ctx, out, array.NewRecordBatch(schema, nil, int64(rows))); err != nil {
				return err
			}
			rows, bytes = 0, 0
		}
		if !ok {
			return nil
		}
	}
}

// runCSV parses records, checks their field count and converts the projected
// fields. Only the columns the query reads are converted (as file_fdw does), so a
// bad value in another column does not make the record bad.
func (s *source) runCSV(ctx context.Context, out exec.Collector) error {
	p := &csvParser{lr: s.lr, delim: s.cfg.delim}
	bb := records.NewBuilder(s.alloc, s.out)
	defer bb.Release()
	skipHeader := s.cfg.header
	for {
		ok, bad := p.next()
		if p.err != nil {
			return s.readError(p.err)
		}
		if !ok {
			break
		}
		if skipHeader {
			skipHeader = false
			continue
		}
		if bad == nil {
			bad = s.csvRow(p, bb)
		}
		if bad != nil {
			s.badRecord(p.rec.line, bad)
			continue
		}
		bb.Commit(p.rec.bytes)
		if bb.Rows() >= BatchRows || bb.Bytes() >= BatchBytes {
			if err := s.emit(ctx, out, bb.Flush()); err != nil {
				return err
			}
		}
	}
	if bb.Rows() > 0 {
		return s.emit(ctx, out, bb.Flush())
	}
	return nil
}

func (s *source) csvRow(p *csvParser, bb *records.Builder) error {
	if n := p.rec.numFields(); n != len(s.cfg.schema) {
		return fmt.Errorf("%d fields, the table has %d columns", n, len(s.cfg.schema))
	}
	bb.Reset()
	for i, col := range s.cfg.cols {
		f, quoted := p.rec.field(col)
		if len(f) == 0 && !quoted {
			bb.SetNull(i)
			continue
		}
		if err := bb.ParseField(i, f); err != nil {
			return fmt.Errorf("column %s: %w", s.out[i].Name, err)
		}
	}
	return nil
}

// runJSON parses one object per line; blank lines are skipped.
func (s *source) runJSON(ctx context.Context, out exec.Collector) error {
	p := records.NewJSONParser(s.out)
	bb := records.NewBuilder(s.alloc, s.out)
	defer bb.Release()
	for {
		line, ok, err := s.lr.next()
		if err != nil {
			return s.readError(err)
		}
		if !ok {
			break
		}
		if isBlank(line) {
			continue
		}
		bb.Reset()
		if err := p.Parse(line, bb); err != nil {
			s.badRecord(s.lr.line, err)
			continue
		}
		bb.Commit(len(line) + 1)
		if bb.Rows() >= BatchRows || bb.Bytes() >= BatchBytes {
			if err := s.emit(ctx, out, bb.Flush()); err != nil {
				return err
			}
		}
	}
	if bb.Rows() > 0 {
		return s.emit(ctx, out, bb.Flush())
	}
	return nil
}

func isBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
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

// csvBatchBytes is BatchBytes for CSV, whose parsed columns take far less room
// than their text: a batch of 256 KiB of TPC-H's lineitem (about 2,000 rows)
// cost 7% less CPU in q1 and q6 than one of 64 KiB, and one of 1 MiB no less.
const csvBatchBytes = 4 * BatchBytes

// csvSplitMin is the smallest CSV file its subtasks share: a smaller one is read
// by subtask 0, since splitting it saves little, and its first bad record is
// then the one a failing query reports (with several subtasks, it is the first
// one a subtask met). A variable, for tests of the split on small files.
var csvSplitMin int64 = 4 << 20

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
	f       *fileReader
	lr      *lineReader // nil when this subtask has nothing to read
	// queue, when not nil, is shared with the subtasks of the same file in this
	// TaskManager: lr reads one of its pieces at a time (rangeQueue) of the
	// file's size bytes, as Open found it.
	queue *rangeQueue
	size  int64
	nbad  int64
	// unread are the table's columns the query does not read, whose values a
	// CSV record must still hold good ones of.
	unread []int
	// opened is the file as Open found it: a file that changes while it is
	// read (checkUnchanged) fails the read.
	opened os.FileInfo
	// base is the number of lines before lr's range, counted when a bad
	// record first needs it (-1: unknown), for the range that starts at
	// baseFor; baseFor is -1 before any is counted.
	base, baseFor int64

	// lock is the task's checkpoint lock, nil when the job takes no checkpoints.
	lock *sync.Mutex
	// first is the offset of the range's first line, as Open found it: the
	// earliest position a checkpoint of this subtask can hold.
	first int64
	// done is the position checkpoints take: the file offset just after the
	// last record emitted downstream (and any bad or blank ones read before
	// it), the range's first line before any. With checkpoints, Run moves it
	// only under lock, together with the batch it covers.
	done int64
}

var (
	_ exec.Source       = (*source)(nil)
	_ exec.Checkpointed = (*source)(nil)
)

func newSource(cfg config) *source {
	out := make(types.Schema, len(cfg.cols))
	for i, c := range cfg.cols {
		out[i] = cfg.schema[c]
	}
	return &source{cfg: cfg, out: out, baseFor: -1, unread: records.Unread(len(cfg.schema), cfg.cols)}
}

// Open opens the file and positions this subtask at its byte range. A file that
// cannot be read fails with exec.ErrBadInput (and fs.ErrNotExist when missing).
func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	s.log = tc.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.lock = tc.CheckpointLock
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
	s.f = newFileReader(f)
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: file %s: not a regular file", exec.ErrBadInput, s.cfg.path)
	}
	s.opened = st
	size := st.Size()
	n, i := int64(max(tc.Parallelism, 1)), int64(tc.Subtask)
	start, end := split(size, i, n), split(size, i+1, n)
	skipFirst := i > 0
	if s.cfg.format == FormatCSV {
		// Quoted fields may hold newlines, so a byte offset cannot tell where a
		// record starts: a subtask counts the quotes before its range to find
		// its first record (csvRecordStart). With bad_rows=skip, where a quote
		// out of place would shift that, and in jobs with checkpoints (whose
		// saved positions are of one subtask reading everything), subtask 0
		// reads everything instead, as for a file under csvSplitMin.
		switch {
		case s.cfg.skipBad || tc.Checkpointing || size < csvSplitMin:
			if i != 0 {
				return nil
			}
			start, end = 0, size
		case i > 0:
			if start, err = csvRecordStart(s.f, size, start); err != nil {
				return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
			}
			skipFirst = false
		}
	}
	s.metrics.SourceTotal.Add(end - start)
	if n > 1 && !tc.Checkpointing && tc.Colocated != nil && s.cfg.format != FormatCSV {
		s.queue = tc.Colocated.Value(func() any { return newRangeQueue() }).(*rangeQueue)
		s.queue.add(start, end)
		s.size = size
		return nil
	}
	s.lr, err = newLineReader(countingReader{s.f, s.metrics}, size, start, end, skipFirst, readBlock)
	if err != nil {
		return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
	}
	s.first, s.done = s.lr.first, s.lr.first
	return nil
}

// nextPiece makes lr read the queue's next piece; it returns false when the
// queue is empty (or the source reads its own range, and is done with it).
func (s *source) nextPiece() (bool, error) {
	if s.queue == nil {
		return false, nil
	}
	start, end, ok := s.queue.take()
	if !ok {
		return false, nil
	}
	var err error
	if s.lr == nil {
		s.lr, err = newLineReader(countingReader{s.f, s.metrics}, s.size, start, end, start > 0, readBlock)
	} else {
		err = s.lr.reset(start, end, start > 0)
	}
	return err == nil, err
}

// next returns the next line to read, from lr's range and then from the
// queue's pieces, or ok=false after the last.
func (s *source) next() (line []byte, ok bool, err error) {
	for {
		if s.lr != nil {
			if line, ok, err = s.lr.next(); ok || err != nil {
				return line, ok, err
			}
		}
		if ok, err = s.nextPiece(); !ok || err != nil {
			return nil, false, err
		}
	}
}

// split returns i*size/n without overflowing for any file size.
func split(size, i, n int64) int64 { return size/n*i + size%n*i/n }

// Run reads the range and emits its rows; it returns nil at the end of the range.
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	if s.lr == nil && s.queue == nil {
		return nil
	}
	if s.lr == nil {
		if ok, err := s.nextPiece(); !ok || err != nil {
			if err != nil {
				return s.readError(err)
			}
			return nil
		}
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
	if err == nil {
		err = s.checkUnchanged()
	}
	return err
}

// checkUnchanged fails a read of a file that changed while it was read: its
// size or modification time is not what Open found, or its path names another
// file now. What was read is then of neither version (a file truncated under
// a query gave a successful answer of part of its rows).
func (s *source) checkUnchanged() error {
	now, err := os.Stat(s.cfg.path)
	switch {
	case err != nil:
		return fmt.Errorf("%w: file %s changed while it was read: %w", exec.ErrBadInput, s.cfg.path, err)
	case !os.SameFile(now, s.opened):
		return fmt.Errorf("%w: file %s was replaced while it was read", exec.ErrBadInput, s.cfg.path)
	case now.Size() != s.opened.Size() || !now.ModTime().Equal(s.opened.ModTime()):
		return fmt.Errorf("%w: file %s changed while it was read (%d bytes, modified %s, when opened; %d bytes, modified %s, at the end)",
			exec.ErrBadInput, s.cfg.path, s.opened.Size(), s.opened.ModTime().Format(time.RFC3339Nano), now.Size(), now.ModTime().Format(time.RFC3339Nano))
	}
	return nil
}

// Close closes the file; it is safe to call twice.
func (s *source) Close() error {
	if s.lr != nil {
		s.lr.release()
		s.lr = nil
	}
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// The source's part in checkpoints (exec/checkpoint.go): its state is the byte
// offset just after the last record the subtask emitted, and a job restarting
// from a checkpoint reads its range on from there. Bad records after the last
// emitted one are read, and counted, again; a record is never emitted twice or
// skipped.

// sourceStateVersion is the version of sourceState's encoding.
const sourceStateVersion = 1

// sourceState is what SnapshotState returns, as JSON.
type sourceState struct {
	Version int    `json:"version"`
	Path    string `json:"path"`
	// Offset is where the subtask reads on: the start of a line of its range,
	// or past the range's end (all of it was read), or the file's end.
	Offset int64 `json:"offset"`
}

// SnapshotState returns the position of this subtask (see source.done), as
// JSON. While Run runs, the task's checkpoint lock should be held.
func (s *source) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	return json.Marshal(sourceState{Version: sourceStateVersion, Path: s.cfg.path, Offset: s.done})
}

// RestoreState makes Run read on from the position in data, which must be one
// SnapshotState of the same subtask returned for this file. It is called after
// Open and before Run. A subtask with nothing to read (a CSV subtask but the
// first) checks data and ignores it.
func (s *source) RestoreState(ctx context.Context, data []byte) error {
	var st sourceState
	if err := json.Unmarshal(data, &st); err != nil {
		return s.restoreError("%w", err)
	}
	switch {
	case st.Version != sourceStateVersion:
		return s.restoreError("state version %d, this release reads version %d", st.Version, sourceStateVersion)
	case st.Path != s.cfg.path:
		return s.restoreError("the state is of file %s", st.Path)
	}
	if s.lr == nil {
		return nil
	}
	size := s.lr.size
	switch {
	case st.Offset < s.first:
		return s.restoreError("offset %d is before this subtask's range, which starts at %d", st.Offset, s.first)
	case st.Offset > size:
		return s.restoreError("offset %d is past the end of the file (%d bytes): it changed since the checkpoint", st.Offset, size)
	}
	// Reading on from mid-line would make a row of a line's tail: the offset
	// must start a line (or be the end of a file whose last line has no "\n").
	if st.Offset > s.first && st.Offset < size {
		var prev [1]byte
		if _, err := s.f.ReadAt(prev[:], st.Offset-1); err != nil {
			return s.readError(err)
		}
		if prev[0] != '\n' {
			return s.restoreError("offset %d does not start a line: the file changed since the checkpoint", st.Offset)
		}
	}
	// The line at the offset is this subtask's (it was next to be read), so the
	// reader starts there without skipping a partial line; an offset past the
	// range's end gives a reader with nothing left.
	lr, err := newLineReader(s.f, size, st.Offset, s.lr.end, false, readBlock)
	if err != nil {
		return s.readError(err)
	}
	s.lr.release()
	s.lr, s.done = lr, st.Offset
	return nil
}

func (s *source) restoreError(format string, args ...any) error {
	return fmt.Errorf("file: restoring the source of file %s: "+format, append([]any{s.cfg.path}, args...)...)
}

func (s *source) readError(err error) error {
	return fmt.Errorf("%w: file %s: %w", exec.ErrBadInput, s.cfg.path, err)
}

// emit hands rec downstream and then moves the position checkpoints take to
// pos, the file offset just after the last record rec holds. With checkpoints
// both happen under the task's checkpoint lock, taken once per batch, so that a
// snapshot never falls between them; a batch that fails to go out does not move
// the position.
func (s *source) emit(ctx context.Context, out exec.Collector, rec arrow.RecordBatch, pos int64) error {
	defer rec.Release()
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.lock != nil {
		s.lock.Lock()
		defer s.lock.Unlock()
	}
	if err := out.Collect(ctx, exec.Batch{Rec: rec}); err != nil {
		return err
	}
	s.done = pos
	return nil
}

// badRecord handles a malformed record at line (1-based within lr's range). By
// default it fails the read, naming the file, the line and the fault, as
// PostgreSQL's COPY does; with bad_rows=skip it returns nil after counting the
// record, keeping the first one's description for the client (TaskMetrics.
// NoteBadRecord) and logging the first few.
func (s *source) badRecord(line int64, cause error) error {
	if !s.cfg.skipBad {
		return fmt.Errorf("%w: file %s, line %s: %v (bad_rows=skip in the table's CONNECTION skips bad rows)",
			exec.ErrBadInput, s.cfg.path, s.lineNumber(line), cause)
	}
	s.nbad++
	if s.nbad > maxLoggedBadRecords {
		s.metrics.BadRecords.Add(1)
		return nil
	}
	lineNo := s.lineNumber(line)
	s.metrics.NoteBadRecord(fmt.Sprintf("file %s, line %s: %v", s.cfg.path, lineNo, cause))
	s.log.Warn("file: skipped a bad record", "path", s.cfg.path, "line", lineNo, "err", cause)
	if s.nbad == maxLoggedBadRecords {
		s.log.Warn("file: further bad records are counted, not logged", "path", s.cfg.path)
	}
	return nil
}

// lineNumber returns the file's line number of line (1-based within lr's
// range), or "?" when the lines before the range could not be counted.
func (s *source) lineNumber(line int64) string {
	if s.baseFor != s.lr.first {
		s.baseFor = s.lr.first
		if n, err := countLines(s.f, s.lr.first); err == nil {
			s.base = n
		} else {
			s.base = -1
		}
	}
	if s.base < 0 {
		return "?"
	}
	return strconv.FormatInt(s.base+line, 10)
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
	// flush emits the lines appended so far, which end at pos.
	flush := func(pos int64) error {
		estimate = min(BatchBytes, b.DataLen()+b.DataLen()/8)
		col := b.NewArray()
		cols := make([]arrow.Array, len(s.out)) // a projection may repeat the column
		for i := range cols {
			cols[i] = col
		}
		rec := array.NewRecordBatch(schema, cols, int64(col.Len()))
		col.Release()
		return s.emit(ctx, out, rec, pos)
	}
	reserve()
	for {
		// A full batch is flushed only once the line that does not fit in it
		// has been read, so what the batch covers ends where that line starts.
		lineStart := s.lr.pos()
		line, ok, err := s.next()
		if err != nil {
			return s.readError(err)
		}
		if !ok {
			break
		}
		if !utf8.Valid(line) {
			if err := s.badRecord(s.lr.line, records.ErrInvalidUTF8); err != nil {
				return err
			}
			continue
		}
		if b.Len() > 0 && (b.Len() >= BatchRows || b.DataLen()+len(line) > BatchBytes) {
			if err := flush(lineStart); err != nil {
				return err
			}
			reserve()
		}
		b.BinaryBuilder.Append(line)
	}
	if b.Len() > 0 {
		return flush(s.lr.pos())
	}
	return nil
}

// runCount emits batches without columns, for a query that reads none (count(*)).
func (s *source) runCount(ctx context.Context, out exec.Collector) error {
	schema := arrow.NewSchema(nil, nil)
	rows, bytes := 0, 0
	for {
		line, ok, err := s.next()
		if err != nil {
			return s.readError(err)
		}
		if ok && !utf8.Valid(line) {
			// As a query that reads the line would find it.
			if err := s.badRecord(s.lr.line, records.ErrInvalidUTF8); err != nil {
				return err
			}
			continue
		}
		if ok {
			rows++
			bytes += len(line) + 1
		}
		if rows > 0 && (!ok || rows >= BatchRows || bytes >= BatchBytes) {
			if err := s.emit(ctx, out, array.NewRecordBatch(schema, nil, int64(rows)), s.lr.pos()); err != nil {
				return err
			}
			rows, bytes = 0, 0
		}
		if !ok {
			return nil
		}
	}
}

// runCSV parses records, checks their field count, converts the projected
// fields and checks the others: a record is good or bad by all its columns,
// whichever a query reads (COUNT(*), COUNT(name) and SELECT * count the same
// rows).
func (s *source) runCSV(ctx context.Context, out exec.Collector) error {
	p := &csvParser{lr: s.lr, delim: s.cfg.delim}
	bb := records.NewBuilder(s.alloc, s.out)
	defer bb.Release()
	blk := newCSVBlock(s.cfg.schema, s.cfg.cols, s.cfg.delim)
	// A reader restored past offset 0 starts after the header.
	skipHeader := s.cfg.header && s.lr.first == 0
	for {
		// Records go a block at a time while they can, and one at a time
		// through p when the block path does not take them (csvBlock).
		if !skipHeader && blk.take(s.lr, BatchRows-bb.Rows(), csvBatchBytes-bb.Bytes()) > 0 {
			if err := s.csvBlock(blk, bb); err != nil {
				return err
			}
			if bb.Rows() >= BatchRows || bb.Bytes() >= csvBatchBytes {
				if err := s.emit(ctx, out, bb.Flush(), s.lr.pos()); err != nil {
					return err
				}
			}
			continue
		}
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
			if err := s.badRecord(p.rec.line, bad); err != nil {
				return err
			}
			// A record that ran on past its first line because of a quote
			// that never closed takes only that line with it.
			p.resumeAfterBad()
			continue
		}
		bb.Commit(p.rec.bytes)
		if bb.Rows() >= BatchRows || bb.Bytes() >= csvBatchBytes {
			if err := s.emit(ctx, out, bb.Flush(), s.lr.pos()); err != nil {
				return err
			}
		}
	}
	if bb.Rows() > 0 {
		return s.emit(ctx, out, bb.Flush(), s.lr.pos())
	}
	return nil
}

// csvBlock parses the records of blk a column at a time into bb, checks the
// columns the query does not read, and commits the good records; each bad one
// goes to badRecord, in the order of the file, as csvRow's would.
func (s *source) csvBlock(blk *csvBlock, bb *records.Builder) error {
	for i, col := range s.cfg.cols {
		bb.ParseColumn(i, blk.fields[col], blk.ascii, blk.bad)
	}
	for _, col := range s.unread {
		if !blk.need[col] {
			if !blk.mixed {
				continue // ASCII text is good text
			}
			blk.textFields(col)
		}
		records.ValidateColumn(s.cfg.schema[col], blk.fields[col], blk.ascii, blk.bad)
	}
	nbad, size := 0, 0
	for r, bad := range blk.bad {
		if bad == nil {
			size += blk.size[r]
			continue
		}
		nbad++
		if err := s.badRecord(blk.line[r], bad); err != nil {
			return err
		}
	}
	bb.CommitBlock(blk.bad, nbad, size)
	return nil
}

func (s *source) csvRow(p *csvParser, bb *records.Builder) error {
	if n := p.rec.numFields(); n != len(s.cfg.schema) {
		return fmt.Errorf("%d fields, the table has %d columns", n, len(s.cfg.schema))
	}
	// Every column of the row is set below: no Reset.
	ascii := p.rec.ascii
	for i, col := range s.cfg.cols {
		f, quoted := p.rec.field(col)
		switch {
		case len(f) == 0 && !quoted:
			bb.SetNull(i)
		case ascii && s.out[i].Type.ID == types.String && !s.out[i].Type.Narrow():
			bb.SetText(i, f) // ASCII is UTF-8 (a varchar(n)'s length is ParseField's to check)
		default:
			if err := bb.ParseField(i, f); err != nil {
				return fmt.Errorf("column %s: %w", s.out[i].Name, err)
			}
		}
	}
	for _, col := range s.unread {
		t := s.cfg.schema[col].Type
		if ascii && t.ID == types.String {
			continue
		}
		if f, quoted := p.rec.field(col); len(f) > 0 || quoted {
			if err := records.Validate(t, f); err != nil {
				return fmt.Errorf("column %s: %w", s.cfg.schema[col].Name, err)
			}
		}
	}
	return nil
}

// runJSON parses one object per line; blank lines are skipped.
func (s *source) runJSON(ctx context.Context, out exec.Collector) error {
	p := records.NewJSONParser(s.cfg.schema, s.cfg.cols)
	bb := records.NewBuilder(s.alloc, s.out)
	defer bb.Release()
	for {
		line, ok, err := s.next()
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
			if err := s.badRecord(s.lr.line, err); err != nil {
				return err
			}
			continue
		}
		bb.Commit(len(line) + 1)
		if bb.Rows() >= BatchRows || bb.Bytes() >= BatchBytes {
			if err := s.emit(ctx, out, bb.Flush(), s.lr.pos()); err != nil {
				return err
			}
		}
	}
	if bb.Rows() > 0 {
		return s.emit(ctx, out, bb.Flush(), s.lr.pos())
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

// countingReader counts what a line reader reads (TaskMetrics.SourceBytes),
// a block at a time.
type countingReader struct {
	r io.ReaderAt
	m *exec.TaskMetrics
}

func (c countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.m.SourceBytes.Add(int64(n))
	return n, err
}

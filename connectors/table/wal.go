package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The write-ahead log (the package doc argues the design). A table's log is
// one file, w-<n>.log, that its version file names together with the offset
// its rows start at (version.Log, version.LogStart). A small INSERT's rows
// (a group of them: group.go) are appended to it as one record and the file
// is flushed: that one fdatasync commits them (the file is zero-filled ahead
// of its records, so the flush writes no metadata: growLog). A record is
//
//	length uint32 | crc32c uint32 | version uint64 | Arrow IPC stream
//
// little-endian, the checksum over the version and the stream, which holds
// the schema and one record batch of the rows. A version committed to the log
// writes no version file: it is the version file of the segments (its file)
// and the log up to its end (logEnd). When the log holds the store's
// foldRecords records or foldBytes, a fold writes its rows as segments and commits a version file
// that names them and a new, empty log; the old log goes with the last
// version that needs it.

const logHeader = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func logFile(n int64) string { return fmt.Sprintf("w-%08d.log", n) }

// encodeLogRecord returns the log record of rec, committed as version v.
func encodeLogRecord(v int64, rec arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(make([]byte, logHeader))
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	err := w.Write(rec)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("table store: log record: %w", err)
	}
	b := buf.Bytes()
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)-logHeader))
	binary.LittleEndian.PutUint64(b[8:], uint64(v))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b, nil
}

// errTorn is a record cut short or with a bad checksum.
var errTorn = errors.New("torn log record")

// readLog calls fn with the version and rows of each record of the log file
// at path from offset from to offset to; rec is released after fn returns.
// With to -1 it reads to the last whole record: one cut short or with a bad
// checksum is what a crash while appending leaves, and ends the log. It
// returns the offset after the last record read.
func readLog(path string, from, to int64, alloc memory.Allocator, fn func(v int64, rec arrow.RecordBatch) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return from, fmt.Errorf("table store: %w", err)
	}
	defer f.Close()
	var data []byte
	if to >= 0 {
		data = make([]byte, to-from)
		if _, err := f.ReadAt(data, from); err != nil {
			return from, fmt.Errorf("table store: %s: %w", filepath.Base(path), err)
		}
	} else {
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			return from, fmt.Errorf("table store: %w", err)
		}
		if data, err = io.ReadAll(f); err != nil {
			return from, fmt.Errorf("table store: %s: %w", filepath.Base(path), err)
		}
	}
	at := from
	for len(data) > 0 {
		v, payload, n, err := parseLogRecord(data)
		if err == nil {
			err = decodeLogPayload(payload, alloc, func(rec arrow.RecordBatch) error { return fn(v, rec) })
		}
		if errors.Is(err, errTorn) && to < 0 {
			return at, nil
		}
		if err != nil {
			return at, fmt.Errorf("table store: %s at %d: %w", filepath.Base(path), at, err)
		}
		data, at = data[n:], at+int64(n)
	}
	return at, nil
}

// parseLogRecord cuts the first record off data: its version, its stream and
// its length.
func parseLogRecord(data []byte) (v int64, payload []byte, n int, err error) {
	if len(data) < logHeader {
		return 0, nil, 0, errTorn
	}
	size := int(binary.LittleEndian.Uint32(data[0:]))
	if size > len(data)-logHeader {
		return 0, nil, 0, errTorn
	}
	n = logHeader + size
	if crc32.Checksum(data[8:n], castagnoli) != binary.LittleEndian.Uint32(data[4:]) {
		return 0, nil, 0, errTorn
	}
	return int64(binary.LittleEndian.Uint64(data[8:])), data[logHeader:n], n, nil
}

func decodeLogPayload(payload []byte, alloc memory.Allocator, fn func(arrow.RecordBatch) error) error {
	r, err := ipc.NewReader(bytes.NewReader(payload), ipc.WithAllocator(alloc))
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
		if err := fn(r.RecordBatch()); err != nil {
			return err
		}
	}
	return r.Err()
}

// openLog opens the log file of the current version for appends. The caller
// holds commitMu.
func (t *tableState) openLog(name string) error {
	if t.log != nil && t.logName == name {
		return nil
	}
	if t.log != nil {
		t.log.Close()
		t.log = nil
	}
	f, err := os.OpenFile(filepath.Join(t.dir, name), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("table store: %w", err)
	}
	t.log, t.logName, t.logSize = f, name, st.Size()
	return nil
}

// appendLog commits rec (a group's rows, as the table's schema holds them)
// as one log record: appended and fsynced, then installed as the next
// version. On an error the record is cut off again and nothing is
// committed. The caller holds commitMu.
func (t *tableState) appendLog(s *Store, rec arrow.RecordBatch) error {
	t.mu.Lock()
	cur := t.current
	t.mu.Unlock()
	data, err := encodeLogRecord(cur.Version+1, rec)
	if err != nil {
		return err
	}
	if err := t.openLog(cur.Log); err != nil {
		return err
	}
	if end := cur.logEnd + int64(len(data)); end > t.logSize {
		err = t.growLog(end)
	}
	if err == nil {
		_, err = t.log.WriteAt(data, cur.logEnd)
	}
	if err == nil {
		err = datasync(t.log)
	}
	if err != nil {
		// The record, or what of it reached the file, is zeros again.
		t.log.WriteAt(make([]byte, len(data)), cur.logEnd)
		return fmt.Errorf("table store: %s: %w", cur.Log, err)
	}
	next := *cur
	next.Version++
	next.logEnd += int64(len(data))
	next.logRows += rec.NumRows()
	next.logRecords++
	t.mu.Lock()
	dead := t.install(&next)
	followed := t.followed()
	t.mu.Unlock()
	removeFiles(t.dir, dead)
	if followed {
		t.recordRows(s, next.Version, nil, []arrow.RecordBatch{rec}, nil)
	}
	return nil
}

// logChunk is how much a log file is extended by at a time.
const logChunk = 1 << 20

// growLog extends the log file with zeros to at least end, in logChunk
// steps, and fsyncs it, so that appending a record changes only data, and
// its fdatasync need not write the file's length (as PostgreSQL fills its
// WAL segments). Zeros are no record: a reader of the log after a crash
// stops at them. The caller holds commitMu.
func (t *tableState) growLog(end int64) error {
	size := max(end, t.logSize+logChunk)
	zeros := make([]byte, 64<<10)
	for at := t.logSize; at < size; at += int64(len(zeros)) {
		if _, err := t.log.WriteAt(zeros[:min(int64(len(zeros)), size-at)], at); err != nil {
			return err
		}
	}
	if err := t.log.Sync(); err != nil {
		return err
	}
	t.logSize = size
	return nil
}

// recordRows records version n's changes for followers as rows: each list's
// rows are written to a segment, which recordChanges links, with the
// segments addedSegs of further added rows.
func (t *tableState) recordRows(s *Store, n int64, deleted, added []arrow.RecordBatch, addedSegs []segment) {
	var segs [2][]segment
	for i, recs := range [][]arrow.RecordBatch{deleted, added} {
		if len(recs) == 0 {
			continue
		}
		w := &Tx{s: s, t: t, schema: recs[0].Schema(), alloc: memory.DefaultAllocator}
		for _, r := range recs {
			r.Retain()
			w.pending = append(w.pending, r)
			w.pendingRows += int(r.NumRows())
		}
		if err := w.writePending(); err != nil {
			w.discard()
			return // the follower fails on the gap
		}
		segs[i] = w.written
	}
	t.recordChanges(n, segs[0], append(segs[1], addedSegs...))
	for _, ss := range segs {
		for _, seg := range ss {
			os.Remove(filepath.Join(t.dir, seg.File))
		}
	}
}

// logRecords reads the rows of v's log, retained: the caller releases them.
func (t *tableState) logRecords(v *version, alloc memory.Allocator) ([]arrow.RecordBatch, error) {
	if v.logRecords == 0 {
		return nil, nil
	}
	var recs []arrow.RecordBatch
	_, err := readLog(filepath.Join(t.dir, v.Log), v.LogStart, v.logEnd, alloc, func(_ int64, rec arrow.RecordBatch) error {
		rec.Retain()
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		for _, r := range recs {
			r.Release()
		}
		return nil, err
	}
	return recs, nil
}

// scanVersion calls fn with each record batch of v: its segments', then its
// log's.
func (t *tableState) scanVersion(v *version, alloc memory.Allocator, fn func(arrow.RecordBatch) error) error {
	for _, seg := range v.Segments {
		if err := readSegment(filepath.Join(t.dir, seg.File), alloc, fn); err != nil {
			return err
		}
	}
	if v.logRecords == 0 {
		return nil
	}
	_, err := readLog(filepath.Join(t.dir, v.Log), v.LogStart, v.logEnd, alloc, func(_ int64, rec arrow.RecordBatch) error { return fn(rec) })
	return err
}

// shouldFold says the current version's log is due for a fold.
func (t *tableState) shouldFold(s *Store) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current.logRecords >= s.foldRecords || t.current.logEnd-t.current.LogStart >= s.foldBytes
}

// shouldFoldNow says the log holds four times the records or bytes that
// start a fold.
func (t *tableState) shouldFoldNow(s *Store) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current.logRecords >= 4*s.foldRecords || t.current.logEnd-t.current.LogStart >= 4*s.foldBytes
}

// fold checkpoints the log: its rows are written as segments (small ones
// merged as a commit merges them) and a version file names them and a new,
// empty log. Commits wait meanwhile; readers of the versions before it read
// the old log, which goes with the last of them.
func (t *tableState) fold(s *Store) error {
	// Not while a statement that changes rows in place holds the writer
	// lock: the row ids it read are of the version it pinned (change.go).
	// A log grown far past its bound waits for the lock.
	if t.shouldFoldNow(s) {
		t.writer.Lock()
	} else if !t.writer.TryLock() {
		return nil
	}
	defer t.writer.Unlock()
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	t.mu.Lock()
	cur, dropped := t.current, t.dropped
	t.mu.Unlock()
	if cur.logRecords == 0 || dropped {
		return nil
	}
	recs, err := t.logRecords(cur, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	w := &Tx{s: s, t: t, schema: recs[0].Schema(), alloc: memory.DefaultAllocator, pending: recs}
	for _, r := range recs {
		w.pendingRows += int(r.NumRows())
	}
	fail := func(err error) error {
		w.discard()
		return err
	}
	if err := w.writePending(); err != nil {
		return fail(err)
	}
	written := w.written
	segs, err := w.mergeSmall(append(append([]segment{}, cur.Segments...), written...))
	if err != nil {
		return fail(err)
	}
	n := cur.Version + 1
	next := &version{Version: n, file: n, Segments: segs, Sinks: cur.Sinks, Log: logFile(n)}
	logPath := filepath.Join(t.dir, next.Log)
	if err := writeSynced(logPath, nil); err != nil {
		return fail(err)
	}
	// The segments' and the new log's directory entries are durable before
	// the version that names them is.
	if err := t.syncDir(); err != nil {
		os.Remove(logPath)
		return fail(err)
	}
	if err := t.writeVersion(next); err != nil {
		os.Remove(logPath)
		return fail(err)
	}
	w.written = nil
	if err := t.openLog(next.Log); err != nil {
		return err
	}
	t.mu.Lock()
	dead := t.install(next)
	followed := t.followed()
	t.mu.Unlock()
	kept := map[string]bool{}
	for _, seg := range segs {
		kept[seg.File] = true
	}
	for _, seg := range written {
		if !kept[seg.File] {
			dead = append(dead, seg.File)
		}
	}
	removeFiles(t.dir, dead)
	if followed {
		t.recordChanges(n, nil, nil) // the same rows: no change
	}
	return nil
}

// recoverLog reads v's log after a restart: the versions committed to it
// after v's file, its rows' count, and its end, where the log is cut (a
// record a crash left half-written goes). A version file without a log (a
// table of an older Hummer) gets one, committed as the next version.
func (t *tableState) recoverLog(v *version) (*version, error) {
	if v.Log == "" {
		n := v.Version + 1
		next := *v
		next.Version, next.file, next.Log, next.LogStart = n, n, logFile(n), 0
		if err := writeSynced(filepath.Join(t.dir, next.Log), nil); err != nil {
			return nil, err
		}
		if err := syncDir(t.dir); err != nil {
			return nil, err
		}
		if err := writeVersion(t.dir, &next, func() error { return syncDir(t.dir) }); err != nil {
			return nil, err
		}
		return &next, nil
	}
	path := filepath.Join(t.dir, v.Log)
	end, err := readLog(path, v.LogStart, -1, memory.DefaultAllocator, func(n int64, rec arrow.RecordBatch) error {
		v.Version = max(v.Version, n)
		v.logRows += rec.NumRows()
		v.logRecords++
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.logEnd = end
	if err := os.Truncate(path, end); err != nil {
		return nil, fmt.Errorf("table store: %w", err)
	}
	return v, nil
}

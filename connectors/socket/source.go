package socket

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"net"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// A batch is emitted when it holds batchRows rows, or as soon as the lines the
// server has sent so far are taken in: under load batches fill up, and a line
// typed into nc goes on at once.
const batchRows = 4096

// maxLineBytes is the longest line the source takes (its newline aside); a
// longer one is a bad
// record, skipped up to its newline, so that a server that never sends a
// newline cannot make the source hold all it sends.
const maxLineBytes = 1 << 20

// readBufferBytes is the size of the reader's buffer: lines up to it are
// parsed where they were read, longer ones gathered first.
const readBufferBytes = 64 << 10

// Connecting again backs off from minBackoff, doubling to maxBackoff, each wait
// drawn between half and all of the current backoff. A connection that gave
// lines starts the backoff afresh. Variables so that tests can shorten them.
var (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// dialTimeout bounds one attempt to connect, so that a host that drops the
// packets counts as unreachable rather than hanging the attempt.
const dialTimeout = 10 * time.Second

// maxLoggedBadRecords is how many bad records the source logs one by one; the
// rest are only counted.
const maxLoggedBadRecords = 5

// source reads the lines of one TCP server.
type source struct {
	cfg    config
	out    types.Schema // the projected columns
	tc     *exec.TaskContext
	log    *slog.Logger
	m      *exec.TaskMetrics
	alloc  memory.Allocator
	parser *records.Parser
	nbad   int64
	conns  int // connections made so far, for messages
}

var _ exec.Source = (*source)(nil)

func newSource(cfg config) *source {
	out := make(types.Schema, len(cfg.cols))
	for i, c := range cfg.cols {
		out[i] = cfg.schema[c]
	}
	return &source{cfg: cfg, out: out}
}

// Open prepares the parser; the server is contacted in Run, which connects
// again while it is not there.
func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	s.tc = tc
	if s.log = tc.Log; s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("socket", s.cfg.addr)
	if s.m = tc.Metrics; s.m == nil {
		s.m = &exec.TaskMetrics{}
	}
	if s.alloc = tc.Alloc; s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	s.parser = records.NewParser(s.cfg.format, s.cfg.schema, s.cfg.cols)
	return nil
}

// Close has nothing to release: Run closes its connection before it returns.
func (s *source) Close() error { return nil }

// Run reads lines from the server until ctx is cancelled, then returns ctx's
// error; it returns another error only when downstream fails. A subtask other
// than 0 emits nothing but that it is idle (exec.Idle).
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	if s.tc.Subtask != 0 {
		s.log.Info("socket source: only subtask 0 reads the socket", "subtask", s.tc.Subtask)
		// It holds no watermark back.
		if err := out.CollectSignal(ctx, exec.Signal{Kind: exec.Idle}); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	bb := records.NewBuilder(s.alloc, s.out)
	defer bb.Release()
	dialer := net.Dialer{Timeout: dialTimeout}
	backoff := minBackoff
	for attempt := 1; ; attempt++ {
		var status string
		conn, err := dialer.DialContext(ctx, "tcp", s.cfg.addr)
		if err != nil {
			status = fmt.Sprintf("connecting to socket %s: %v (attempt %d)", s.cfg.addr, err, attempt)
		} else {
			s.conns++
			s.m.SetStatus("")
			s.log.Info("socket source connected", "connection", s.conns)
			lines, err := s.read(ctx, conn, bb, out)
			conn.Close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var down downstreamError
			if errors.As(err, &down) {
				return down.err
			}
			why := "closed the connection"
			if err != nil {
				why = fmt.Sprintf("connection failed: %v", err)
			}
			status = fmt.Sprintf("socket %s %s after %d lines; connecting again", s.cfg.addr, why, lines)
			s.log.Info("socket source lost the server", "connection", s.conns, "lines", lines, "err", err)
			if lines > 0 {
				attempt, backoff = 0, minBackoff // the next dial is attempt 1
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.m.SetStatus(status)
		wait := backoff/2 + rand.N(backoff/2+1)
		if attempt > 0 && bits.OnesCount(uint(attempt)) == 1 { // attempts 1, 2, 4, 8...: the trouble shows without a line per retry
			s.log.Warn("socket source waiting for the server", "status", status, "retry_in", wait)
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// downstreamError is an error of the collector the source emits to, which
// fails the job rather than making the source connect again.
type downstreamError struct{ err error }

func (e downstreamError) Error() string { return e.err.Error() }

// read emits the lines of conn until the server closes it (nil), reading
// fails (that error), ctx is cancelled, or downstream fails (a
// downstreamError). It returns how many lines it read, good or bad.
func (s *source) read(ctx context.Context, conn net.Conn, bb *records.Builder, out exec.Collector) (int64, error) {
	// Cancelling the job closes the connection, which ends a blocked read.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	r := bufio.NewReaderSize(conn, readBufferBytes)
	var (
		lines   int64
		long    []byte // a line longer than the buffer, gathered
		gather  bool   // long holds the start of the line being read
		tooLong bool   // the line being read is past maxLineBytes
	)
	flush := func() error {
		if bb.Rows() == 0 {
			return nil
		}
		rec := bb.Flush()
		defer rec.Release()
		if err := out.Collect(ctx, exec.Batch{Rec: rec}); err != nil {
			return downstreamError{err}
		}
		return nil
	}
	for {
		frag, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong && len(long)+len(frag) > maxLineBytes+len("\r\n") {
				tooLong, long = true, long[:0]
			}
			if !tooLong {
				long, gather = append(long, frag...), true
			}
			continue
		}
		if err != nil && len(frag) == 0 && !gather && !tooLong {
			// Nothing of a line is pending: the stream ended between lines.
			if ferr := flush(); ferr != nil {
				return lines, ferr
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return lines, err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			// The connection broke in the middle of a line, which may be
			// cut short: drop it.
			if ferr := flush(); ferr != nil {
				return lines, ferr
			}
			return lines, err
		}
		lines++
		line := frag
		if gather {
			long = append(long, frag...)
			line = long
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case tooLong || len(line) > maxLineBytes:
			s.badRecord(lines, fmt.Errorf("a line longer than %d bytes", maxLineBytes))
		default:
			if perr := s.parser.Parse(line, bb); perr != nil {
				s.badRecord(lines, perr)
			} else {
				bb.Commit(len(line))
			}
		}
		long, gather, tooLong = long[:0], false, false
		if bb.Rows() >= batchRows || r.Buffered() == 0 || err != nil {
			if ferr := flush(); ferr != nil {
				return lines, ferr
			}
		}
		if err != nil { // io.EOF after a last line without a newline
			return lines, nil
		}
	}
}

// badRecord counts line n of the current connection, which cause made
// unreadable.
func (s *source) badRecord(n int64, cause error) {
	s.m.NoteBadRecord(fmt.Sprintf("socket %s, connection %d, line %d: %v", s.cfg.addr, s.conns, n, cause))
	s.nbad++
	if s.nbad <= maxLoggedBadRecords {
		s.log.Warn("bad record", "connection", s.conns, "line", n, "err", cause)
	} else if s.nbad == maxLoggedBadRecords+1 {
		s.log.Warn("more bad records; counting them without logging each")
	}
}

// sleep waits d, or less if ctx is cancelled first; it reports whether it
// waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

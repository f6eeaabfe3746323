package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// idleBufferLimit is the largest output buffer a connection keeps between queries;
// a bigger one (left by a large result) goes back to outBufs so idle connections
// stay small.
const idleBufferLimit = 64 << 10

// outBufs holds the output buffers of large results between queries, each of
// capacity outBufSize. Without it, every large result grew a fresh buffer from
// nothing, and faulting in its pages held back the first rows: WordCount's
// first row reached the client about 0.5 ms later at parallelism 1.
var outBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, outBufSize)
	return &b
}}

// outBufSize is room for flushThreshold bytes of rows and the row that crosses it.
const outBufSize = 2 * flushThreshold

// bigOut gives c an output buffer that holds a flushThreshold of rows, from
// outBufs, keeping what it already holds.
func (c *conn) bigOut() {
	if cap(c.out) >= outBufSize {
		return
	}
	b := (*outBufs.Get().(*[]byte))[:0]
	c.out = append(b, c.out...)
}

// smallOut gives a large output buffer back to outBufs once c is idle.
func (c *conn) smallOut() {
	if cap(c.out) > idleBufferLimit {
		if cap(c.out) == outBufSize {
			b := c.out[:0]
			outBufs.Put(&b)
		}
		c.out = nil
	}
}

// simpleQuery runs a Query message's statements and sends their results, or the
// error that stopped them. The caller sends ReadyForQuery.
func (c *conn) simpleQuery(query string) {
	if strings.TrimSpace(query) == "" {
		c.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	ctx, stop := context.WithCancel(c.ctx)
	c.setStatement(stop)
	defer func() {
		c.setStatement(nil)
		stop()
	}()

	if cp, ok, err := parseCopy(query); ok {
		switch {
		case err != nil:
			c.sendError(err, query)
		case cp.To:
			c.copyOut(ctx, query)
		default:
			c.copyIn(ctx, query)
		}
		return
	}
	results := 0
	var emitErr error
	err := c.sess.Exec(ctx, query, func(r *session.Result) error {
		results++
		if err := c.sendResult(ctx, r); err != nil {
			emitErr = err
			return err
		}
		return nil
	})
	if err == nil {
		err = emitErr // in case Exec lost it
	}
	switch {
	case c.writeErr != nil:
		// The client is gone; serve notices when it flushes.
	case err != nil:
		c.sendError(err, query)
	case results == 0:
		// Only empty statements, such as ";".
		c.send(&pgproto3.EmptyQueryResponse{})
	}
}

// sendError answers a failed statement; internal errors are logged in full.
//
// The error fails the session's transaction block, if one is open.
func (c *conn) sendError(err error, query string) {
	c.failTransaction()
	resp, internal := errorResponse(err)
	c.srv.observe(func(o Observer) { o.Error(resp.Code) })
	if internal {
		c.logInternal("statement failed with an internal error", err, "query", redact(query))
	} else {
		c.log.Debug("statement failed", "err", err, "code", resp.Code)
	}
	c.send(resp)
}

// copyOut runs COPY ... TO STDOUT.
func (c *conn) copyOut(ctx context.Context, query string) {
	copier, ok := c.sess.(Copier)
	if !ok {
		c.sendError(fmt.Errorf("%w: COPY is not available", sql.ErrUnsupported), query)
		return
	}
	r, err := copier.CopyOut(ctx, query)
	if err == nil {
		err = c.sendCopy(ctx, r)
	}
	if err != nil && c.writeErr == nil {
		c.sendError(err, query)
	}
}

// sendResult sends one statement's result: its notices, then either its rows
// (RowDescription, DataRows, CommandComplete) or just its CommandComplete.
func (c *conn) sendResult(ctx context.Context, r *session.Result) error {
	if err := c.dropPrepared(r); err != nil {
		return err
	}
	c.sendWarnings(r.Warnings)
	c.sendNotices(r.Notices)
	if r.Rows == nil {
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(r.Tag)})
		return nil
	}
	defer r.Rows.Close()

	schema := r.Rows.Schema()
	if len(schema) > math.MaxUint16 {
		return fmt.Errorf("wire: result has %d columns, the protocol allows %d", len(schema), math.MaxUint16)
	}
	rd := rowDescription(schema)
	setOrigins(rd, r.Origins)
	c.send(rd)
	var rows int64
	if er, ok := r.Rows.(session.EncodingRows); ok && er.EncodeWith(encoderFor(len(schema), nil, c.timeZone())) {
		sent, err := c.sendEncodedRows(ctx, er)
		if err != nil {
			return err
		}
		c.sendNotices(session.LateNotices(r.Rows))
		c.send(&pgproto3.CommandComplete{CommandTag: commandTag(r.Tag, sent)})
		return nil
	}
	for {
		b, err := r.Rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n := b.NumRows()
		err = c.sendBatch(b, len(schema), nil)
		b.Release()
		if err != nil {
			return err
		}
		rows += n
		// Each batch goes out as soon as it is encoded: a streaming query's rows
		// should reach the client without waiting for the next batch.
		if err := c.flush(); err != nil {
			return err
		}
	}
	c.sendNotices(session.LateNotices(r.Rows))
	c.send(&pgproto3.CommandComplete{CommandTag: commandTag(r.Tag, rows)})
	return nil
}

// sendWarnings sends each warning as a WARNING.
func (c *conn) sendWarnings(warnings []session.Warning) {
	if !c.sends("WARNING") {
		return
	}
	for _, w := range warnings {
		code := codeOf(w.Kind)
		if code == "" {
			code = "01000" // warning
		}
		c.send(&pgproto3.NoticeResponse{
			Severity: "WARNING", SeverityUnlocalized: "WARNING",
			Code: code, Message: w.Message, Detail: w.Detail,
		})
	}
}

// dropPrepared drops the prepared statements a DEALLOCATE or DISCARD ALL
// names, as PostgreSQL's, whose SQL-level and protocol-level prepared
// statements are one namespace: a named one that does not exist fails the
// statement (26000). The unnamed statement is not dropped.
func (c *conn) dropPrepared(r *session.Result) error {
	switch {
	case r.DropAllPrepared:
		for name := range c.stmts {
			if name != "" {
				delete(c.stmts, name)
			}
		}
	case r.DropPrepared != "":
		if c.stmts[r.DropPrepared] == nil {
			return protoErrorf("26000", "prepared statement \"%s\" does not exist", r.DropPrepared)
		}
		delete(c.stmts, r.DropPrepared)
	}
	return nil
}

// sendNotices sends each notice as a NOTICE.
func (c *conn) sendNotices(notices []string) {
	if !c.sends("NOTICE") {
		return
	}
	for _, n := range notices {
		c.send(&pgproto3.NoticeResponse{
			Severity: "NOTICE", SeverityUnlocalized: "NOTICE",
			Code: codeSuccessfulCompletion, Message: n,
		})
	}
}

// sendBatch encodes b's rows as DataRow messages straight into the output buffer,
// flushing whenever it grows past flushThreshold. formats gives each column's
// format code; nil means text for all.
func (c *conn) sendBatch(b arrow.RecordBatch, ncols int, formats []int16) error {
	e := &c.enc
	e.ncols, e.formats, e.loc = ncols, formats, c.timeZone()
	if err := e.prepare(b); err != nil {
		return err
	}
	defer e.done() // keep no batch alive through the scratch space
	c.bigOut()
	for i, n := 0, int(b.NumRows()); i < n; {
		c.out, i = e.appendRows(c.out, i, n, flushThreshold)
		if len(c.out) >= flushThreshold {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendEncodedRows sends all of rows' rows, which their producers encode (rows
// accepted an encoder), and reports how many it sent. Each batch goes out as
// soon as it arrives, as in sendResult.
func (c *conn) sendEncodedRows(ctx context.Context, rows session.EncodingRows) (int64, error) {
	var sent int64
	for {
		data, n, err := rows.NextEncoded(ctx)
		if errors.Is(err, io.EOF) {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
		sent += n
		if err := c.sendEncoded(data); err != nil {
			return sent, err
		}
		if err := c.flush(); err != nil {
			return sent, err
		}
	}
}

// sendEncoded sends DataRow messages encoded elsewhere (session.EncodingRows):
// a small run of them joins the output buffer (so that it goes out in one write
// with, say, the RowDescription before it), a larger one is written after the
// buffer as it is, without a copy.
func (c *conn) sendEncoded(data []byte) error {
	if len(c.out)+len(data) <= flushThreshold {
		c.out = append(c.out, data...)
		return nil
	}
	if err := c.flush(); err != nil {
		return err
	}
	return c.write(data)
}

// encoderFor returns the session.RowEncoder of results of ncols columns in the
// given formats (nil: text for all), for the tasks that produce them to run.
func encoderFor(ncols int, formats []int16, loc *time.Location) session.RowEncoder {
	return func(dst []byte, b arrow.RecordBatch) ([]byte, error) {
		e := rowEncoder{ncols: ncols, formats: formats, loc: loc}
		if err := e.prepare(b); err != nil {
			return dst, err
		}
		dst, _ = e.appendRows(dst, 0, int(b.NumRows()), math.MaxInt)
		return dst, nil
	}
}

// rowEncoder encodes the rows of a batch of ncols columns as DataRow messages, in
// the format codes formats gives (nil: text for all). Its scratch space is reused
// from batch to batch: one rowEncoder serves one goroutine.
type rowEncoder struct {
	ncols     int
	formats   []int16
	loc       *time.Location // the session's TimeZone, for timestamptz text
	appenders []textAppender
	nullable  []arrow.Array // a column that may hold NULLs, else nil
}

// prepare readies e for b's rows.
func (e *rowEncoder) prepare(b arrow.RecordBatch) error {
	if int(b.NumCols()) != e.ncols {
		return fmt.Errorf("wire: batch has %d columns, schema %d", b.NumCols(), e.ncols)
	}
	e.appenders, e.nullable = e.appenders[:0], e.nullable[:0]
	for j := range e.ncols {
		col, f := b.Column(j), b.Schema().Field(j)
		if e.formats != nil && e.formats[j] == pgproto3.BinaryFormat {
			e.appenders = append(e.appenders, binaryAppenderFor(col, f))
		} else {
			e.appenders = append(e.appenders, appenderFor(col, f, e.loc))
		}
		if col.NullN() > 0 || col.DataType().ID() == arrow.NULL {
			e.nullable = append(e.nullable, col)
		} else {
			e.nullable = append(e.nullable, nil)
		}
	}
	return nil
}

// done drops e's references to the batch it was prepared for.
func (e *rowEncoder) done() {
	clear(e.appenders)
	clear(e.nullable)
}

// appendRows appends the DataRows of rows i to n-1 of the prepared batch to dst,
// stopping early once dst holds limit bytes or more; it returns dst and the first
// row not appended.
func (e *rowEncoder) appendRows(dst []byte, i, n, limit int) ([]byte, int) {
	ncols := e.ncols
	for ; i < n && len(dst) < limit; i++ {
		start := len(dst)
		dst = append(dst, 'D', 0, 0, 0, 0, byte(ncols>>8), byte(ncols))
		for j, app := range e.appenders {
			if col := e.nullable[j]; col != nil && IsNull(col, i) {
				dst = append(dst, 0xff, 0xff, 0xff, 0xff) // length -1: NULL
				continue
			}
			lenAt := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			dst = app(dst, i)
			binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
		}
		// The length counts itself but not the type byte.
		binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	}
	return dst, i
}

// commandTag is the CommandComplete tag of a statement that returned rows:
// PostgreSQL adds the row count to SELECT (and FETCH, MOVE, COPY) but not to SHOW,
// EXPLAIN and the like.
func commandTag(tag string, rows int64) []byte {
	switch tag {
	case "SELECT", "FETCH", "MOVE", "COPY":
		return strconv.AppendInt(append([]byte(tag), ' '), rows, 10)
	}
	return []byte(tag)
}

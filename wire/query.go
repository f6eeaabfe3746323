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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// idleBufferLimit is the largest output buffer a connection keeps between queries;
// a bigger one (left by a large result) is dropped so idle connections stay small.
const idleBufferLimit = 64 << 10

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

	if inner, ok := copyQuery(query); ok {
		c.copyOut(ctx, inner)
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
func (c *conn) sendError(err error, query string) {
	resp, internal := errorResponse(err)
	if internal {
		c.log.Error("statement failed", "err", err, "query", redact(query))
	} else {
		c.log.Debug("statement failed", "err", err, "code", resp.Code)
	}
	c.send(resp)
}

// copyOut runs COPY (<query>) TO STDOUT.
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
	for _, n := range r.Notices {
		c.send(&pgproto3.NoticeResponse{
			Severity: "NOTICE", SeverityUnlocalized: "NOTICE",
			Code: codeSuccessfulCompletion, Message: n,
		})
	}
	if r.Rows == nil {
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(r.Tag)})
		return nil
	}
	defer r.Rows.Close()

	schema := r.Rows.Schema()
	if len(schema) > math.MaxUint16 {
		return fmt.Errorf("wire: result has %d columns, the protocol allows %d", len(schema), math.MaxUint16)
	}
	c.send(rowDescription(schema))
	var rows int64
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
	c.send(&pgproto3.CommandComplete{CommandTag: commandTag(r.Tag, rows)})
	return nil
}

// sendBatch encodes b's rows as DataRow messages straight into the output buffer,
// flushing whenever it grows past flushThreshold. formats gives each column's
// format code; nil means text for all.
func (c *conn) sendBatch(b arrow.RecordBatch, ncols int, formats []int16) error {
	if int(b.NumCols()) != ncols {
		return fmt.Errorf("wire: batch has %d columns, schema %d", b.NumCols(), ncols)
	}
	appenders, nullable := c.appenders[:0], c.nullable[:0]
	for j := range ncols {
		col := b.Column(j)
		if formats != nil && formats[j] == pgproto3.BinaryFormat {
			appenders = append(appenders, binaryAppenderFor(col))
		} else {
			appenders = append(appenders, appenderFor(col))
		}
		if col.NullN() > 0 || col.DataType().ID() == arrow.NULL {
			nullable = append(nullable, col) // this column may hold NULLs
		} else {
			nullable = append(nullable, nil)
		}
	}
	c.appenders, c.nullable = appenders, nullable
	defer func() { // keep no batch alive through the scratch space
		clear(appenders)
		clear(nullable)
	}()
	out := c.out
	nrows := int(b.NumRows())
	for i := range nrows {
		start := len(out)
		out = append(out, 'D', 0, 0, 0, 0, byte(ncols>>8), byte(ncols))
		for j, app := range appenders {
			if col := nullable[j]; col != nil && IsNull(col, i) {
				out = append(out, 0xff, 0xff, 0xff, 0xff) // length -1: NULL
				continue
			}
			lenAt := len(out)
			out = append(out, 0, 0, 0, 0)
			out = app(out, i)
			binary.BigEndian.PutUint32(out[lenAt:], uint32(len(out)-lenAt-4))
		}
		// The length counts itself but not the type byte.
		binary.BigEndian.PutUint32(out[start+1:], uint32(len(out)-start-1))
		if len(out) >= flushThreshold {
			c.out = out
			if err := c.flush(); err != nil {
				return err
			}
			out = c.out
		}
	}
	c.out = out
	return nil
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

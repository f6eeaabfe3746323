package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// Copier is implemented by sessions that can stream a query's changes as COPY
// output (COPY (<query>) TO STDOUT) and take COPY t FROM STDIN.
type Copier interface {
	// CopyOut starts the query, which may read streams that never end; its rows
	// arrive until the query ends or ctx is cancelled.
	CopyOut(ctx context.Context, query string) (*session.Result, error)
	// CopyIn starts COPY ... FROM STDIN; the server feeds it the client's data.
	CopyIn(ctx context.Context, query string) (*session.CopyIn, error)
}

// isCopyFrom reports whether query is a COPY ... FROM STDIN.
func isCopyFrom(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 4 || !strings.EqualFold(q[:4], "copy") {
		return false
	}
	_, ok, _ := sql.ParseCopyFrom(query)
	return ok
}

// copyIn runs COPY ... FROM STDIN: CopyInResponse, then the client's CopyData
// until CopyDone (the rows are committed: "COPY n") or CopyFail (none are).
// A record that does not parse fails the COPY; the error is sent once the
// client has ended its data, as the protocol has it, and nothing is kept.
func (c *conn) copyIn(ctx context.Context, query string) {
	copier, ok := c.sess.(Copier)
	if !ok {
		c.sendError(fmt.Errorf("%w: COPY is not available", sql.ErrUnsupported), query)
		return
	}
	ci, err := copier.CopyIn(ctx, query)
	if err != nil {
		c.sendError(err, query)
		return
	}
	defer ci.Abort() // after Done, a no-op
	formats := make([]uint16, ci.Columns)
	var bin *binaryCopy
	var overall byte
	if ci.Binary {
		bin, overall = &binaryCopy{}, 1
		for i, t := range ci.Types {
			formats[i] = 1
			oid, _, _ := pgType(t)
			bin.oids = append(bin.oids, oid)
		}
	}
	c.send(&pgproto3.CopyInResponse{OverallFormat: overall, ColumnFormatCodes: formats})
	if err := c.flush(); err != nil {
		return
	}
	var failed error
	write := ci.Write
	if bin != nil {
		write = func(data []byte) error { return bin.write(data, ci.WriteRow) }
	}
	for {
		typ, body, err := c.frames.next()
		if err != nil {
			c.nc.Close() // the serve loop ends on its next read
			return
		}
		switch typ {
		case 'd':
			if failed == nil {
				failed = write(body)
			}
		case 'c':
			if failed == nil && bin != nil {
				failed = bin.close()
			}
			if failed == nil {
				var r *session.Result
				if r, failed = ci.Done(); failed == nil {
					c.send(&pgproto3.CommandComplete{CommandTag: []byte(r.Tag)})
					return
				}
			}
			c.sendError(failed, query)
			return
		case 'f':
			msg, _, _ := decodeMessage(typ, body)
			reason := ""
			if f, ok := msg.(*pgproto3.CopyFail); ok {
				reason = f.Message
			}
			c.send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: codeQueryCanceled,
				Message: "COPY from stdin failed: " + reason})
			c.failTransaction()
			return
		case 'H', 'S': // ignored during COPY, as PostgreSQL does
		case 'X':
			c.nc.Close()
			return
		default:
			c.send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: codeProtocolViolation,
				Message: fmt.Sprintf("unexpected message type 0x%02X during COPY from stdin", typ)})
			c.failTransaction()
			return
		}
	}
}

// copyQuery returns the inner query of a COPY (<query>) TO STDOUT, if query is
// one (sql.CopyQuery: the parser cannot read it, so the wire server runs it).
func copyQuery(query string) (string, bool) { return sql.CopyQuery(query) }

// sendCopy streams a result as COPY text: one line per row, the change kind
// first (insert, delete, update_before, update_after: a continuous query's
// updates come as an update_before of the old row then an update_after of the
// new), then the columns, tab-separated, NULL as \N. It ends with
// CopyDone and "COPY n" when the query ends; a continuous query streams until
// the client cancels it.
func (c *conn) sendCopy(ctx context.Context, r *session.Result) error {
	defer r.Rows.Close()
	schema := r.Rows.Schema()
	c.send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(schema)+1)})
	if err := c.flush(); err != nil {
		return err
	}
	var (
		rows int64
		line []byte
		cell []byte
	)
	next := func(ctx context.Context) (exec.Batch, error) {
		rec, err := r.Rows.Next(ctx)
		return exec.Batch{Rec: rec}, err
	}
	if cr, ok := r.Rows.(session.ChangeRows); ok {
		next = cr.NextChanges
	}
	for {
		chg, err := next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		b := chg.Rec
		cols := b.Columns()
		for i := 0; i < int(b.NumRows()); i++ {
			line = append(line[:0], chg.Op(i).String()...)
			for j, col := range cols {
				line = append(line, '\t')
				if IsNull(col, i) {
					line = append(line, '\\', 'N')
					continue
				}
				cell = AppendText(cell[:0], col, b.Schema().Field(j), i)
				line = appendCopyEscaped(line, cell)
			}
			line = append(line, '\n')
			c.send(&pgproto3.CopyData{Data: line})
		}
		rows += b.NumRows()
		b.Release()
		// Changes reach the client as they happen.
		if err := c.flush(); err != nil {
			return err
		}
	}
	c.send(&pgproto3.CopyDone{})
	c.send(&pgproto3.CommandComplete{CommandTag: commandTag("COPY", rows)})
	return nil
}

// appendCopyEscaped appends a value in COPY's text format: backslash, tab,
// newline and carriage return escaped.
func appendCopyEscaped(dst, v []byte) []byte {
	for _, ch := range v {
		switch ch {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, ch)
		}
	}
	return dst
}

// copySignature starts PostgreSQL's binary COPY data.
var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

// binaryCopy decodes binary COPY data as it arrives, in chunks cut anywhere:
// the signature, flags and header extension, then tuples (an int16 count of
// fields, each an int32 length, -1 for NULL, and the value in its type's
// binary format, decoded as Bind's binary parameters are) up to the trailer,
// a count of -1.
type binaryCopy struct {
	oids   []uint32 // the fields' types
	buf    []byte   // data not decoded yet
	header bool     // the header has been read
	ended  bool     // the trailer has been read
}

func (d *binaryCopy) write(data []byte, emit func([]types.Value) error) error {
	d.buf = append(d.buf, data...)
	off := 0
	if !d.header {
		if len(d.buf) < len(copySignature)+8 {
			return nil
		}
		if !bytes.Equal(d.buf[:len(copySignature)], copySignature) {
			return protoErrorf("22P04", "COPY file signature not recognized")
		}
		ext := int(binary.BigEndian.Uint32(d.buf[len(copySignature)+4:]))
		if len(d.buf) < len(copySignature)+8+ext {
			return nil
		}
		off, d.header = len(copySignature)+8+ext, true
	}
	for !d.ended && len(d.buf)-off >= 2 {
		n := int(int16(binary.BigEndian.Uint16(d.buf[off:])))
		if n == -1 {
			d.ended, off = true, off+2
			break
		}
		if n != len(d.oids) {
			return protoErrorf("22P04", "row field count is %d, expected %d", n, len(d.oids))
		}
		vals, p, complete := make([]types.Value, n), off+2, true
		for i := 0; i < n && complete; i++ {
			if len(d.buf)-p < 4 {
				complete = false
				break
			}
			l := int(int32(binary.BigEndian.Uint32(d.buf[p:])))
			p += 4
			switch {
			case l == -1:
				vals[i] = types.NullValue(types.NullType)
			case l < 0:
				return protoErrorf("22P04", "invalid field size %d", l)
			case len(d.buf)-p < l:
				complete = false
			default:
				v, err := decodeParam(d.buf[p:p+l:p+l], pgproto3.BinaryFormat, d.oids[i])
				if err != nil {
					return err
				}
				vals[i], p = v, p+l
			}
		}
		if !complete {
			break
		}
		if err := emit(vals); err != nil {
			return err
		}
		off = p
	}
	d.buf = d.buf[:copy(d.buf, d.buf[off:])]
	return nil
}

// close checks that the data ended between tuples: with the trailer or, as
// PostgreSQL also takes it (pgx sends none), at the end of the last tuple.
func (d *binaryCopy) close() error {
	if !d.header || len(d.buf) > 0 {
		return protoErrorf("22P04", "unexpected EOF in COPY data")
	}
	return nil
}

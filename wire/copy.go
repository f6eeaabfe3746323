package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// Copier is implemented by sessions that can stream a query's changes as COPY
// output (COPY (<query>) TO STDOUT) and take COPY t FROM STDIN.
type Copier interface {
	// CopyOut starts COPY ... TO STDOUT, whose query may read streams that
	// never end; its rows arrive until the query ends or ctx is cancelled.
	CopyOut(ctx context.Context, query string) (*session.CopyOut, error)
	// CopyIn starts COPY ... FROM STDIN; the server feeds it the client's data.
	CopyIn(ctx context.Context, query string) (*session.CopyIn, error)
}

// parseCopy returns query's COPY statement if it is one (sql.ParseCopy: the
// parser cannot read COPY, so the wire server runs it), and the error in its
// options.
func parseCopy(query string) (*sql.Copy, bool, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 4 || !strings.EqualFold(q[:4], "copy") {
		return nil, false, nil
	}
	return sql.ParseCopy(query)
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

package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// sendCopy streams COPY ... TO STDOUT's rows as PostgreSQL's copyto.c does:
// CopyOutResponse (every column text, or every column binary), the HEADER
// line if asked for, one CopyData per row, then CopyDone and "COPY n" when
// the query ends. A continuous query's rows are changes: each has its kind
// first, in the op column (session.CopyOpColumn), and the COPY streams until
// the client cancels it or statement_timeout ends it.
func (c *conn) sendCopy(ctx context.Context, co *session.CopyOut) error {
	defer co.Rows.Close()
	e := newCopyEncoder(co.Options, co.Changes, co.ForceQuote)
	e.loc = c.timeZone()
	formats := make([]uint16, e.fields)
	var overall byte
	if co.Options.Binary {
		overall = 1
		for i := range formats {
			formats[i] = 1
		}
	}
	c.send(&pgproto3.CopyOutResponse{OverallFormat: overall, ColumnFormatCodes: formats})
	if h := e.header(co.Rows.Schema()); h != nil {
		c.send(&pgproto3.CopyData{Data: h})
	}
	if err := c.flush(); err != nil {
		return err
	}
	next := func(ctx context.Context) (exec.Batch, error) {
		rec, err := co.Rows.Next(ctx)
		return exec.Batch{Rec: rec}, err
	}
	if cr, ok := co.Rows.(session.ChangeRows); ok && co.Changes {
		next = cr.NextChanges
	}
	send := func(row []byte) { c.send(&pgproto3.CopyData{Data: row}) }
	var rows int64
	for {
		b, err := next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		e.encodeBatch(b, send)
		rows += int64(b.NumRows())
		b.Rec.Release()
		// Changes reach the client as they happen.
		if err := c.flush(); err != nil {
			return err
		}
	}
	if t := e.trailer(); t != nil {
		c.send(&pgproto3.CopyData{Data: t})
	}
	c.send(&pgproto3.CopyDone{})
	c.send(&pgproto3.CommandComplete{CommandTag: commandTag("COPY", rows)})
	return nil
}

// copyEncoder writes rows in one of COPY's formats: text, csv or binary.
type copyEncoder struct {
	o   sql.CopyOptions
	loc *time.Location // the session's TimeZone, for timestamptz text
	// changes says each row starts with its change kind (the op column).
	changes bool
	// fields is the number of fields of a row, the op column included.
	fields int
	// forceQuote says, per field, that csv quotes its values.
	forceQuote []bool
	// pending is binary COPY's header until it goes out: PostgreSQL sends
	// it with the first row, or with the trailer when there is none.
	pending []byte
	line    []byte // the row being encoded
	cell    []byte // a value before escaping
	apps    []textAppender
}

// newCopyEncoder returns the encoder of a COPY's rows; changes says each row
// starts with its change kind, forceQuote is FORCE_QUOTE's per data column.
func newCopyEncoder(o sql.CopyOptions, changes bool, forceQuote []bool) *copyEncoder {
	e := &copyEncoder{o: o, changes: changes}
	if changes {
		e.forceQuote = append(e.forceQuote, o.ForceQuoteAll)
	}
	e.forceQuote = append(e.forceQuote, forceQuote...)
	e.fields = len(e.forceQuote)
	if o.Binary {
		e.pending = appendCopyBinaryHeader(nil)
	}
	return e
}

// header returns the HEADER line naming the columns of schema (the op
// column first), or nil if the COPY has none.
func (e *copyEncoder) header(schema types.Schema) []byte {
	if !e.o.Header {
		return nil
	}
	var names []string
	if e.changes {
		names = append(names, session.CopyOpColumn)
	}
	for _, f := range schema {
		names = append(names, f.Name)
	}
	return e.appendHeader(nil, names)
}

// encodeBatch encodes b's rows, passing each to emit, which must be done with
// it when it returns.
func (e *copyEncoder) encodeBatch(b exec.Batch, emit func(row []byte)) {
	cols := b.Rec.Columns()
	e.apps = e.apps[:0]
	for j, col := range cols {
		e.apps = append(e.apps, e.appender(col, b.Rec.Schema().Field(j)))
	}
	for i := 0; i < b.NumRows(); i++ {
		line := e.startRow(append(e.line[:0], e.pending...))
		e.pending = nil
		f := 0
		if e.changes {
			line = e.appendValue(line, f, []byte(b.Op(i).String()))
			f++
		}
		for j, col := range cols {
			if IsNull(col, i) {
				line = e.appendNull(line, f)
			} else {
				line = e.appendCell(line, f, e.apps[j], i)
			}
			f++
		}
		e.line = e.endRow(line)
		emit(e.line)
	}
}

// trailer returns what ends binary COPY data, nil for the other formats.
func (e *copyEncoder) trailer() []byte {
	if !e.o.Binary {
		return nil
	}
	return binary.BigEndian.AppendUint16(e.pending, 0xffff)
}

// appender returns the appender of col's values in the COPY's format.
func (e *copyEncoder) appender(col arrow.Array, f arrow.Field) textAppender {
	if e.o.Binary {
		return binaryAppenderFor(col, f)
	}
	return appenderFor(col, f, e.loc)
}

// appendHeader appends the HEADER line naming the fields, as PostgreSQL
// writes its column names: each escaped or quoted as a value is.
func (e *copyEncoder) appendHeader(dst []byte, names []string) []byte {
	for f, name := range names {
		if f > 0 {
			dst = append(dst, e.o.Delimiter)
		}
		if e.o.CSV {
			dst = appendCopyCSV(dst, []byte(name), e.o, false, len(names) == 1)
		} else {
			dst = appendCopyText(dst, []byte(name), e.o.Delimiter)
		}
	}
	return append(dst, '\n')
}

func (e *copyEncoder) startRow(dst []byte) []byte {
	if e.o.Binary {
		return binary.BigEndian.AppendUint16(dst, uint16(e.fields))
	}
	return dst
}

func (e *copyEncoder) endRow(dst []byte) []byte {
	if e.o.Binary {
		return dst
	}
	return append(dst, '\n')
}

// appendNull appends field f's NULL: the NULL string, never quoted or
// escaped, or a length of -1 in binary.
func (e *copyEncoder) appendNull(dst []byte, f int) []byte {
	if e.o.Binary {
		return binary.BigEndian.AppendUint32(dst, 0xffffffff)
	}
	if f > 0 {
		dst = append(dst, e.o.Delimiter)
	}
	return append(dst, e.o.Null...)
}

// appendCell appends field f's value, row i of the column app appends.
func (e *copyEncoder) appendCell(dst []byte, f int, app textAppender, i int) []byte {
	e.cell = app(e.cell[:0], i)
	return e.appendValue(dst, f, e.cell)
}

// appendValue appends field f's value v (its text, or its binary encoding).
func (e *copyEncoder) appendValue(dst []byte, f int, v []byte) []byte {
	switch {
	case e.o.Binary:
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		return append(dst, v...)
	case f > 0:
		dst = append(dst, e.o.Delimiter)
	}
	if e.o.CSV {
		return appendCopyCSV(dst, v, e.o, e.forceQuote[f], e.fields == 1)
	}
	return appendCopyText(dst, v, e.o.Delimiter)
}

// appendCopyBinaryHeader appends binary COPY's header: the signature, no
// flags and no header extension.
func appendCopyBinaryHeader(dst []byte) []byte {
	dst = append(dst, copySignature...)
	return append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
}

// appendCopyText appends v in COPY's text format, as PostgreSQL's
// CopyAttributeOutText does: a backslash and the delimiter get a backslash
// before them; backspace, form feed, newline, carriage return, tab and
// vertical tab become \b \f \n \r \t \v; other control characters stay as
// they are (unless one is the delimiter).
func appendCopyText(dst, v []byte, delim byte) []byte {
	for _, ch := range v {
		if ch < 0x20 {
			var esc byte
			switch ch {
			case '\b':
				esc = 'b'
			case '\f':
				esc = 'f'
			case '\n':
				esc = 'n'
			case '\r':
				esc = 'r'
			case '\t':
				esc = 't'
			case '\v':
				esc = 'v'
			}
			switch {
			case esc != 0:
				dst = append(dst, '\\', esc)
			case ch == delim:
				dst = append(dst, '\\', ch)
			default:
				dst = append(dst, ch)
			}
			continue
		}
		if ch == '\\' || ch == delim {
			dst = append(dst, '\\')
		}
		dst = append(dst, ch)
	}
	return dst
}

// appendCopyCSV appends v in COPY's csv format, as PostgreSQL's
// CopyAttributeOutCSV does: quoted if quote says so (FORCE_QUOTE), if it
// equals the NULL string (so that it reads back as itself, not NULL: the
// empty string is ""), if it holds the delimiter, the quote, a newline or a
// carriage return, or if it is \. alone on its line (single: the row's only
// field), which would read as the end of the data; inside quotes the quote
// and the escape get the escape before them. Leading and trailing blanks need
// no quotes.
func appendCopyCSV(dst, v []byte, o sql.CopyOptions, quote, single bool) []byte {
	if !quote && string(v) == o.Null {
		quote = true
	}
	if !quote {
		if single && string(v) == `\.` {
			quote = true
		} else {
			for _, ch := range v {
				if ch == o.Delimiter || ch == o.Quote || ch == '\n' || ch == '\r' {
					quote = true
					break
				}
			}
		}
	}
	if !quote {
		return append(dst, v...)
	}
	dst = append(dst, o.Quote)
	for _, ch := range v {
		if ch == o.Quote || ch == o.Escape {
			dst = append(dst, o.Escape)
		}
		dst = append(dst, ch)
	}
	return append(dst, o.Quote)
}

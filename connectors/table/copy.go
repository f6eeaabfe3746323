package table

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/exec/expr"
)

// CopyFormat is how the data of COPY ... FROM STDIN is written, as
// PostgreSQL's text and csv formats: records end at a newline (in csv, one
// outside quotes), fields are cut at Delimiter, and Null stands for NULL (in
// csv, only unquoted).
type CopyFormat struct {
	CSV       bool
	Header    bool // the first record is skipped
	Delimiter byte
	Null      string
	Quote     byte // csv
	Escape    byte // csv
	// Zone is where a timestamp with time zone's text without a zone is
	// wall time: the session's TimeZone (nil: UTC).
	Zone *time.Location
}

// CopyReader parses the data of a COPY into a Tx, record by record as it
// arrives in chunks of any size. A record that does not parse fails the COPY
// with its line number; the caller then rolls the Tx back, so that nothing of
// the COPY stays, as in PostgreSQL.
type CopyReader struct {
	tx     *Tx
	f      CopyFormat
	fields []int // the table column of each field of a record
	// fill are the columns no field gives, with their DEFAULT's text (nil:
	// NULL).
	fill   map[int]*string
	bb     *records.Builder
	buf    []byte // data not yet parsed: the start of a record
	scan   int    // how far buf was searched for the record's end
	quoted bool   // csv: buf[:scan] ends inside quotes
	line   int64  // lines of data before buf's start
	ended  bool   // the end marker \. came
	// per record, reused
	cells   [][]byte
	nulls   []bool
	scratch []byte
}

// NewCopyReader returns a reader into tx whose records have the table
// columns fields, in order; every other column takes its default's text from
// defaults, or NULL.
func NewCopyReader(tx *Tx, fields []int, defaults map[int]string, f CopyFormat) *CopyReader {
	r := &CopyReader{tx: tx, f: f, fields: fields, fill: map[int]*string{}, bb: records.NewBuilder(memory.DefaultAllocator, tx.c.Schema)}
	r.bb.SetZone(f.Zone)
	given := map[int]bool{}
	for _, c := range fields {
		given[c] = true
	}
	for c := range tx.c.Schema {
		if !given[c] {
			if d, ok := defaults[c]; ok {
				r.fill[c] = &d
			} else {
				r.fill[c] = nil
			}
		}
	}
	return r
}

// CopyError is a COPY record refused for its format or a value, with
// PostgreSQL's codes: 22P04 (bad_copy_file_format) for the wrong number of
// fields, 22P02 (invalid_text_representation) for a bad value.
type CopyError struct {
	Code  string
	Msg   string
	Where string // PostgreSQL's CONTEXT line, if any: the COPY, line and column
}

func (e *CopyError) Error() string {
	if e.Where != "" {
		return e.Msg + " (" + e.Where + ")"
	}
	return e.Msg
}

// SQLState is the error's SQLSTATE.
func (e *CopyError) SQLState() string { return e.Code }

// ErrorMessage is the message without its context, as PostgreSQL's
// ErrorResponse carries it.
func (e *CopyError) ErrorMessage() string { return e.Msg }

// ErrorContext is the error's CONTEXT line.
func (e *CopyError) ErrorContext() string { return e.Where }

// valueError is the error for the text b of column c that did not parse
// (err): PostgreSQL's message and code for it where the engine's cast agrees
// that b is bad, with the line and column as its CONTEXT.
func (r *CopyReader) valueError(line int64, c int, b []byte, err error) error {
	col := r.tx.c.Schema[c]
	where := fmt.Sprintf("%s, line %d, column %s: \"%s\"", r.where(), line, col.Name, b)
	pgErr := expr.TextInputError(col.Type, b)
	switch {
	case pgErr == nil:
		return &CopyError{Code: "22P02", Msg: fmt.Sprintf("%s, line %d, column %s: %v", r.where(), line, col.Name, err)}
	case errors.Is(pgErr, expr.ErrOutOfRange):
		return &CopyError{Code: "22003", Msg: pgErr.Error(), Where: where}
	case errors.Is(pgErr, expr.ErrTooLong):
		return &CopyError{Code: "22001", Msg: pgErr.Error(), Where: where}
	}
	return &CopyError{Code: "22P02", Msg: pgErr.Error(), Where: where}
}

// Write parses the complete records of data (and keeps the rest for the next
// Write).
func (r *CopyReader) Write(data []byte) error {
	r.buf = append(r.buf, data...)
	start := 0
	for !r.ended {
		end := r.recordEnd(start)
		if end < 0 {
			break
		}
		rec := r.buf[start:end]
		start = end + 1
		if err := r.record(rec); err != nil {
			return err
		}
	}
	if r.ended {
		r.buf, r.scan = r.buf[:0], 0
		return nil
	}
	n := copy(r.buf, r.buf[start:])
	r.buf = r.buf[:n]
	r.scan -= start
	return nil
}

// recordEnd returns the index in buf of the newline that ends the record
// starting at start, or -1 if it has not arrived.
func (r *CopyReader) recordEnd(start int) int {
	if r.scan < start {
		r.scan, r.quoted = start, false
	}
	if !r.f.CSV {
		if i := bytes.IndexByte(r.buf[r.scan:], '\n'); i >= 0 {
			end := r.scan + i
			r.scan = end + 1
			return end
		}
		r.scan = len(r.buf)
		return -1
	}
	for i := r.scan; i < len(r.buf); i++ {
		switch c := r.buf[i]; {
		case c == r.f.Quote:
			r.quoted = !r.quoted // an escaped quote ("") toggles twice
		case c == r.f.Escape && r.quoted && i+1 < len(r.buf) && r.buf[i+1] == r.f.Quote:
			i++
		case c == '\n' && !r.quoted:
			r.scan = i + 1
			return i
		}
	}
	r.scan = len(r.buf)
	return -1
}

// Close parses a last record without a newline and writes what is left to
// the Tx. The reader is not used after.
func (r *CopyReader) Close() error {
	defer r.bb.Release()
	if !r.ended && len(r.buf) > 0 {
		if r.f.CSV && r.quoted {
			return &CopyError{Code: "22P04", Msg: "unterminated CSV quoted field",
				Where: fmt.Sprintf("%s, line %d: \"%s\"", r.where(), r.line+1, r.buf)}
		}
		if err := r.record(r.buf); err != nil {
			return err
		}
	}
	return r.flush()
}

// Release frees the reader's memory after a failed COPY.
func (r *CopyReader) Release() { r.bb.Release() }

func (r *CopyReader) where() string { return "COPY " + r.tx.c.Table }

func (r *CopyReader) flush() error {
	if r.bb.Rows() == 0 {
		return nil
	}
	rec := r.bb.Flush()
	defer rec.Release()
	return r.tx.Append(rec)
}

// record parses one record (without its newline) into the builder.
func (r *CopyReader) record(rec []byte) error {
	line := r.line + 1
	r.line += int64(bytes.Count(rec, []byte{'\n'})) + 1
	if len(rec) > 0 && rec[len(rec)-1] == '\r' {
		rec = rec[:len(rec)-1]
	}
	if string(rec) == `\.` {
		r.ended = true
		return nil
	}
	if r.f.Header && line == 1 {
		return nil
	}
	var err error
	if r.f.CSV {
		err = r.splitCSV(rec)
	} else {
		err = r.splitText(rec)
	}
	// PostgreSQL's CONTEXT for a record of the wrong shape quotes the record
	// (made only then: a COPY of millions of good records makes none).
	recordWhere := func() string { return fmt.Sprintf("%s, line %d: \"%s\"", r.where(), line, rec) }
	if err != nil {
		return &CopyError{Code: "22P04", Msg: err.Error(), Where: recordWhere()}
	}
	schema := r.tx.c.Schema
	switch {
	case len(r.cells) > len(r.fields):
		return &CopyError{Code: "22P04", Msg: "extra data after last expected column", Where: recordWhere()}
	case len(r.cells) < len(r.fields):
		return &CopyError{Code: "22P04", Msg: fmt.Sprintf("missing data for column \"%s\"", schema[r.fields[len(r.cells)]].Name), Where: recordWhere()}
	}
	r.bb.Reset()
	for k, c := range r.fields {
		if r.nulls[k] {
			r.bb.SetNull(c)
			continue
		}
		if err := r.bb.ParseField(c, r.cells[k]); err != nil {
			return r.valueError(line, c, r.cells[k], err)
		}
	}
	for c, d := range r.fill {
		if d == nil {
			r.bb.SetNull(c)
		} else if err := r.bb.ParseField(c, []byte(*d)); err != nil {
			return r.valueError(line, c, []byte(*d), err)
		}
	}
	r.bb.Commit(len(rec))
	if r.bb.Rows() >= BatchRows {
		return r.flush()
	}
	return nil
}

// splitText cuts a text-format record into fields, undoing its backslash
// escapes; a field that is exactly the NULL string is NULL.
func (r *CopyReader) splitText(rec []byte) error {
	r.cells, r.nulls, r.scratch = r.cells[:0], r.nulls[:0], r.scratch[:0]
	for {
		i := bytes.IndexByte(rec, r.f.Delimiter)
		field := rec
		if i >= 0 {
			field = rec[:i]
		}
		if string(field) == r.f.Null {
			r.cells, r.nulls = append(r.cells, nil), append(r.nulls, true)
		} else if bytes.IndexByte(field, '\\') < 0 {
			r.cells, r.nulls = append(r.cells, field), append(r.nulls, false)
		} else {
			r.cells, r.nulls = append(r.cells, unescapeText(nil, field)), append(r.nulls, false)
		}
		if i < 0 {
			return nil
		}
		rec = rec[i+1:]
	}
}

// unescapeText undoes COPY text's escapes: \b \f \n \r \t \v, \digits (octal),
// \xhh, and a backslash before any other character stands for it.
func unescapeText(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			dst = append(dst, c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'v':
			dst = append(dst, '\v')
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(s) && isHex(s[i+1]) {
				i++
				v = v*16 + hexValue(s[i])
				n++
			}
			if n == 0 {
				dst = append(dst, 'x')
			} else {
				dst = append(dst, byte(v))
			}
		default:
			if c >= '0' && c <= '7' {
				v := int(c - '0')
				for n := 1; n < 3 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7'; n++ {
					i++
					v = v*8 + int(s[i]-'0')
				}
				dst = append(dst, byte(v))
			} else {
				dst = append(dst, c)
			}
		}
	}
	return dst
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexValue(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

// splitCSV cuts a csv record into fields (RFC 4180 with COPY's QUOTE and
// ESCAPE); an unquoted field equal to the NULL string is NULL, a quoted one
// never is.
func (r *CopyReader) splitCSV(rec []byte) error {
	r.cells, r.nulls = r.cells[:0], r.nulls[:0]
	r.scratch = r.scratch[:0]
	q, esc, delim := r.f.Quote, r.f.Escape, r.f.Delimiter
	type span struct{ start, end int } // in scratch
	var spans []span
	quotedAny := []bool{}
	i := 0
	for {
		start := len(r.scratch)
		quoted := false
		for i < len(rec) && rec[i] != delim {
			if rec[i] != q {
				r.scratch = append(r.scratch, rec[i])
				i++
				continue
			}
			quoted = true
			i++
			for {
				if i >= len(rec) {
					return fmt.Errorf("unterminated CSV quoted field")
				}
				c := rec[i]
				if c == esc && i+1 < len(rec) && rec[i+1] == q {
					r.scratch = append(r.scratch, q)
					i += 2
					continue
				}
				if c == q {
					i++
					break
				}
				r.scratch = append(r.scratch, c)
				i++
			}
		}
		spans = append(spans, span{start, len(r.scratch)})
		quotedAny = append(quotedAny, quoted)
		if i >= len(rec) {
			break
		}
		i++ // the delimiter
	}
	for k, sp := range spans {
		field := r.scratch[sp.start:sp.end]
		if !quotedAny[k] && string(field) == r.f.Null {
			r.cells, r.nulls = append(r.cells, nil), append(r.nulls, true)
			continue
		}
		r.cells, r.nulls = append(r.cells, field), append(r.nulls, false)
	}
	return nil
}

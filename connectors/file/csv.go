package file

import (
	"bytes"
	"errors"
	"fmt"
)

// csvRecord is one parsed CSV record: its fields' bytes, unquoted and concatenated,
// and whether each field was quoted (an empty unquoted field is NULL, an empty
// quoted one is the empty string, as in PostgreSQL's COPY).
type csvRecord struct {
	buf    []byte
	ends   []int // end of each field in buf
	quoted []bool
	line   int64 // number of the record's first line
	bytes  int   // input bytes of the record
}

func (r *csvRecord) reset(line int64) {
	r.buf, r.ends, r.quoted = r.buf[:0], r.ends[:0], r.quoted[:0]
	r.line, r.bytes = line, 0
}

func (r *csvRecord) endField(quoted bool) {
	r.ends = append(r.ends, len(r.buf))
	r.quoted = append(r.quoted, quoted)
}

func (r *csvRecord) numFields() int { return len(r.ends) }

func (r *csvRecord) field(i int) (b []byte, quoted bool) {
	start := 0
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.buf[start:r.ends[i]], r.quoted[i]
}

// csvParser reads RFC 4180 records from a lineReader: fields separated by delim,
// a field in double quotes may hold the delimiter, newlines and doubled quotes.
// Inside a quoted field a "\r\n" line break becomes "\n", as in encoding/csv.
// Empty lines hold no record and are skipped.
type csvParser struct {
	lr    *lineReader
	delim byte
	rec   csvRecord
	err   error // the read error that ended parsing
	// resumeAt, when not negative, is where the line after the last
	// record's first line starts, and resumeLine that line's number less
	// one: a record that ran on over further lines because of a quote that
	// never closed (resumeAfterBad).
	resumeAt, resumeLine int64
}

// maxQuotedBytes bounds a record whose quoted field runs on past its first
// line (DuckDB's max_line_size): beyond it, or at the end of the file, the
// quote is taken to be unterminated.
const maxQuotedBytes = 2 << 20

var errQuoteTooLong = fmt.Errorf("a quoted field runs on for over %d MiB: an unterminated quote?", maxQuotedBytes>>20)

// next parses the next record into p.rec. It returns ok=false at the end of the
// input or on a read error (p.err), and bad != nil for a malformed record, which
// is consumed through the line where the fault was found.
func (p *csvParser) next() (ok bool, bad error) {
	for {
		line, more, err := p.lr.next()
		if err != nil {
			p.err = err
			return false, nil
		}
		if !more {
			return false, nil
		}
		if len(line) == 0 {
			continue
		}
		p.rec.reset(p.lr.line)
		p.rec.bytes = len(line) + 1
		p.resumeAt, p.resumeLine = p.lr.pos(), p.lr.line
		bad := p.parse(line)
		if p.err != nil {
			return false, nil
		}
		if bad != errUnterminated && bad != errQuoteTooLong {
			p.resumeAt = -1
		}
		return true, bad
	}
}

// resumeAfterBad makes the parser go on, after the bad record it returned,
// from the line after that record's first line when the record ran on past it
// because of a quote that never closed: a stray quote costs one line, not the
// rest of the file.
func (p *csvParser) resumeAfterBad() {
	if p.resumeAt >= 0 {
		p.lr.rewind(p.resumeAt, p.resumeLine)
		p.resumeAt = -1
	}
}

var errUnterminated = errors.New("unterminated quoted field: no closing quote before the end of the file")

func (p *csvParser) parse(line []byte) error {
	r := &p.rec
	i := 0
	for {
		if i < len(line) && line[i] == '"' {
			i++
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					// The field goes on on the next line.
					r.buf = append(r.buf, line[i:]...)
					r.buf = append(r.buf, '\n')
					next, more, err := p.lr.nextLine()
					if err != nil {
						p.err = err
						return err
					}
					if !more {
						return errUnterminated
					}
					r.bytes += len(next) + 1
					if r.bytes > maxQuotedBytes {
						return errQuoteTooLong
					}
					line, i = next, 0
					continue
				}
				r.buf = append(r.buf, line[i:i+j]...)
				i += j + 1
				if i < len(line) && line[i] == '"' {
					r.buf = append(r.buf, '"')
					i++
					continue
				}
				break
			}
			r.endField(true)
			if i == len(line) {
				return nil
			}
			if line[i] != p.delim {
				return fmt.Errorf("field %d: unexpected %q after the closing quote", r.numFields(), line[i])
			}
			i++
			continue
		}
		end := len(line)
		j := bytes.IndexByte(line[i:], p.delim)
		if j >= 0 {
			end = i + j
		}
		f := line[i:end]
		if bytes.IndexByte(f, '"') >= 0 {
			return fmt.Errorf(`field %d: a '"' in an unquoted field (quote the field and double the quote)`, r.numFields()+1)
		}
		r.buf = append(r.buf, f...)
		r.endField(false)
		if j < 0 {
			return nil
		}
		i = end + 1
	}
}

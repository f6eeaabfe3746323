package file

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// csvRecord is one parsed CSV record: its fields' bytes and whether each field
// was quoted (an empty unquoted field is NULL, an empty quoted one is the empty
// string, as in PostgreSQL's COPY). A record of one line without quotes (most
// records) borrows that line: its fields are the pieces between delimiters.
// Any other has its fields unquoted and concatenated in buf.
type csvRecord struct {
	buf    []byte
	data   []byte  // buf, or the borrowed line
	starts []int32 // start and end of each field in data
	ends   []int32
	quoted []bool
	ascii  bool  // every byte of data is ASCII (so valid UTF-8)
	line   int64 // number of the record's first line
	bytes  int   // input bytes of the record
}

func (r *csvRecord) reset(line int64) {
	r.buf, r.starts, r.ends, r.quoted = r.buf[:0], r.starts[:0], r.ends[:0], r.quoted[:0]
	r.line, r.bytes = line, 0
}

// endField ends a field of buf that started at its previous field's end.
func (r *csvRecord) endField(quoted bool) {
	start := int32(0)
	if n := len(r.ends); n > 0 {
		start = r.ends[n-1]
	}
	r.starts = append(r.starts, start)
	r.ends = append(r.ends, int32(len(r.buf)))
	r.quoted = append(r.quoted, quoted)
}

func (r *csvRecord) numFields() int { return len(r.ends) }

func (r *csvRecord) field(i int) (b []byte, quoted bool) {
	return r.data[r.starts[i]:r.ends[i]], r.quoted[i]
}

// borrow splits line at its delimiters if it holds no quote, and returns false
// (having taken nothing) if it does. It also notes whether the line is ASCII,
// whose fields then need no UTF-8 check. It reads the line eight bytes at a
// time, looking at single bytes only in words that hold a delimiter or a quote.
func (r *csvRecord) borrow(line []byte, delim byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	dm, qm := ones*uint64(delim), ones*uint64('"')
	start := 0
	var high uint64
	field := func(end int) {
		r.starts = append(r.starts, int32(start))
		r.ends = append(r.ends, int32(end))
		r.quoted = append(r.quoted, false)
		start = end + 1
	}
	i := 0
	for ; i+8 <= len(line); i += 8 {
		w := binary.LittleEndian.Uint64(line[i:])
		high |= w
		x, y := w^dm, w^qm // a zero byte where w has a delimiter, a quote
		if ((x-ones)&^x|(y-ones)&^y)&highs == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			switch line[j] {
			case delim:
				field(j)
			case '"':
				r.starts, r.ends, r.quoted = r.starts[:0], r.ends[:0], r.quoted[:0]
				return false
			}
		}
	}
	for j := i; j < len(line); j++ {
		high |= uint64(line[j])
		switch line[j] {
		case delim:
			field(j)
		case '"':
			r.starts, r.ends, r.quoted = r.starts[:0], r.ends[:0], r.quoted[:0]
			return false
		}
	}
	field(len(line))
	r.data, r.ascii = line, high&highs == 0
	return true
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
		if p.rec.borrow(line, p.delim) {
			p.resumeAt = -1
			return true, nil
		}
		bad := p.parse(line)
		p.rec.data, p.rec.ascii = p.rec.buf, false
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

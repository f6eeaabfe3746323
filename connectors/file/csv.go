package file

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
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

// borrow splits line at its delimiters, and returns false (having taken
// nothing) for a line that parse must read: one with a quoted field that holds
// a doubled quote or runs on past the line, or with a quote out of place. A
// field in quotes otherwise borrows what is between them. It also notes
// whether the line is ASCII, whose fields then need no UTF-8 check. It reads
// the line eight bytes at a time and visits only the delimiters and quotes.
func (r *csvRecord) borrow(line []byte, delim byte) bool {
	dm, qm := swarOnes*uint64(delim), swarOnes*uint64('"')
	start := 0 // of the field being read
	field := func(lo, hi int, quoted bool) {
		r.starts = append(r.starts, int32(lo))
		r.ends = append(r.ends, int32(hi))
		r.quoted = append(r.quoted, quoted)
	}
	// quotedField takes the field whose opening quote is at j, and returns
	// where the next field starts (past the end of line after the last).
	quotedField := func(j int) (int, bool) {
		if j != start {
			return 0, false // a quote inside an unquoted field
		}
		end := bytes.IndexByte(line[j+1:], '"')
		if end < 0 {
			return 0, false // the field goes on on the next line
		}
		end += j + 1
		if end+1 < len(line) && line[end+1] != delim {
			return 0, false // a doubled quote, or something after the closing one
		}
		field(j+1, end, true)
		return end + 2, true
	}
	i := 0
words:
	for i+8 <= len(line) {
		w := binary.LittleEndian.Uint64(line[i:])
		for m := swarZeros(w^dm) | swarZeros(w^qm); m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)>>3
			if line[j] == delim {
				field(start, j, false)
				start = j + 1
				continue
			}
			next, ok := quotedField(j)
			if !ok {
				return r.drop()
			}
			start, i = next, next
			continue words
		}
		i += 8
	}
	for j := i; j < len(line); j++ {
		switch line[j] {
		case delim:
			field(start, j, false)
			start = j + 1
		case '"':
			next, ok := quotedField(j)
			if !ok {
				return r.drop()
			}
			start, j = next, next-1
		}
	}
	if start <= len(line) { // else the last field was quoted, up to the end of line
		field(start, len(line), false)
	}
	r.data, r.ascii = line, isASCII(line)
	return true
}

// drop forgets the fields borrow took, and returns false.
func (r *csvRecord) drop() bool {
	r.starts, r.ends, r.quoted = r.starts[:0], r.ends[:0], r.quoted[:0]
	return false
}

const swarOnes, swarLows, swarHighs = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f, 0x8080808080808080

// swarZeros returns w with the high bit of each of its zero bytes set, and no
// other bit: exact, so each set bit is a byte to visit.
func swarZeros(w uint64) uint64 {
	return ^((w&swarLows + swarLows) | w | swarLows)
}

// isASCII reports whether every byte of b is below 0x80.
func isASCII(b []byte) bool {
	var high uint64
	for ; len(b) >= 8; b = b[8:] {
		high |= binary.LittleEndian.Uint64(b)
	}
	for _, c := range b {
		high |= uint64(c)
	}
	return high&swarHighs == 0
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

package file

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/hummer-db/hummer/exec/types"
)

// csvBlock is a block of CSV records, each of one line, split into fields and
// kept by column, for the records package to parse a column at a time
// (records.Builder.ParseColumn). Its fields borrow the lines of the
// lineReader's buffer (nextBuffered), so a block holds only lines the buffer
// holds whole, and is parsed and committed before the reader reads on.
//
// The block takes only the records csvRecord.borrow splits, with the table's
// number of fields: a record that needs more (a doubled quote, a quoted field
// that runs on over lines, a quote out of place, a wrong number of fields)
// ends the block, unread, for the row path (csvParser) to read and report.
type csvBlock struct {
	rec csvRecord
	// need is, per column of the table, whether the block keeps its fields:
	// a column the query reads, or one whose text is not checked by the
	// record being ASCII (see source.csvRow); the others' are left empty.
	need []bool
	// fields holds, per column of the table, each row's field: nil for
	// NULL (an empty field not in quotes), as records.ParseColumn takes it.
	fields [][][]byte
	ascii  []bool   // per row, whether it is all ASCII
	text   [][]byte // per row, its line
	mixed  bool     // some row is not all ASCII
	delim  byte
	line   []int64 // per row, the number of its line in the reader's range
	size   []int   // per row, its bytes of input
	bad    []error // per row, its first fault (set by parsing; nil: good)
}

// newCSVBlock returns a block of records of a table of schema whose columns
// cols (positions in schema) the query reads.
func newCSVBlock(schema types.Schema, cols []int, delim byte) *csvBlock {
	b := &csvBlock{delim: delim, need: make([]bool, len(schema)), fields: make([][][]byte, len(schema))}
	for c, f := range schema {
		b.need[c] = f.Type.ID != types.String
	}
	for _, c := range cols {
		b.need[c] = true
	}
	return b
}

// rows returns the number of records in the block.
func (b *csvBlock) rows() int { return len(b.line) }

// take empties the block and fills it with the records that follow in lr's
// buffer, until it holds maxRows of them or maxBytes of input, or comes to a
// record it does not take (see csvBlock) or to the end of the buffer. It
// returns the number of records taken; lr is left at the first line not
// taken. Empty lines are skipped, as csvParser skips them.
func (b *csvBlock) take(lr *lineReader, maxRows, maxBytes int) int {
	for c := range b.fields {
		clear(b.fields[c]) // drop what the last block borrowed
		b.fields[c] = b.fields[c][:0]
	}
	clear(b.text)
	b.ascii, b.text, b.line, b.size, b.bad = b.ascii[:0], b.text[:0], b.line[:0], b.size[:0], b.bad[:0]
	b.mixed = false
	taken := 0
	for len(b.line) < maxRows && taken < maxBytes {
		pos, lineNo := lr.pos(), lr.line
		line, ok := lr.nextBuffered()
		if !ok {
			break
		}
		if len(line) == 0 {
			continue
		}
		ascii, ok := b.split(line)
		if !ok {
			lr.rewind(pos, lineNo)
			break
		}
		b.ascii = append(b.ascii, ascii)
		b.mixed = b.mixed || !ascii
		b.text = append(b.text, line)
		b.line = append(b.line, lr.line)
		b.size = append(b.size, len(line)+1)
		b.bad = append(b.bad, nil)
		taken += len(line) + 1
	}
	return b.rows()
}

// split appends the fields of line to the block's columns, as
// csvRecord.borrow splits it, and reports whether line is all ASCII. For a
// line borrow does not take, or with other than the table's number of
// fields, it returns ok=false, the block as it was. Like borrow it reads the
// line eight bytes at a time and visits only the delimiters and quotes, but
// puts each field straight into its column.
func (b *csvBlock) split(line []byte) (ascii, ok bool) {
	delim := b.delim
	dm, qm := swarOnes*uint64(delim), swarOnes*uint64('"')
	last := len(b.fields) - 1
	c, start := 0, 0 // the field being read, and where it starts
	put := func(lo, hi int, quoted bool) {
		if b.need[c] {
			f := line[lo:hi]
			if hi == lo && !quoted {
				f = nil
			}
			b.fields[c] = append(b.fields[c], f)
		}
		c++
	}
	// quoted takes the field whose opening quote is at j, and returns where
	// the next field starts, past the end of line after the last field.
	quoted := func(j int) (int, bool) {
		end := bytes.IndexByte(line[j+1:], '"')
		if j != start || end < 0 {
			return 0, false // a quote inside a field, or a field that runs on past the line
		}
		end += j + 1
		switch {
		case end+1 == len(line) && c == last:
			put(j+1, end, true)
			return end + 2, true
		case end+1 < len(line) && line[end+1] == delim && c < last:
			put(j+1, end, true)
			return end + 2, true
		}
		return 0, false // a doubled quote, something after the closing one, or a wrong count
	}
	var high uint64
	quotes := false
	i := 0
words:
	for i+8 <= len(line) {
		w := binary.LittleEndian.Uint64(line[i:])
		high |= w
		ds, qs := swarZeros(w^dm), swarZeros(w^qm)
		if qs != 0 {
			ds &= qs&-qs - 1 // the delimiters before the first quote
		}
		for ; ds != 0; ds &= ds - 1 {
			j := i + bits.TrailingZeros64(ds)>>3
			if c == last {
				return false, b.undo(c)
			}
			put(start, j, false)
			start = j + 1
		}
		if qs != 0 {
			next, ok := quoted(i + bits.TrailingZeros64(qs)>>3)
			if !ok {
				return false, b.undo(c)
			}
			quotes, start, i = true, next, next
			continue words
		}
		i += 8
	}
	for j := i; j < len(line); j++ {
		high |= uint64(line[j])
		switch line[j] {
		case delim:
			if c == last {
				return false, b.undo(c)
			}
			put(start, j, false)
			start = j + 1
		case '"':
			next, ok := quoted(j)
			if !ok {
				return false, b.undo(c)
			}
			quotes, start, j = true, next, next-1
		}
	}
	if start <= len(line) { // else the last field was quoted, up to the end of line
		if c != last {
			return false, b.undo(c)
		}
		put(start, len(line), false)
	}
	if quotes { // the words read skipped what was in quotes
		return isASCII(line), true
	}
	return high&swarHighs == 0, true
}

// undo drops the fields split put in the first n columns for the line it
// gives up on, and returns false.
func (b *csvBlock) undo(n int) bool {
	rows := b.rows()
	for c := range n {
		if b.need[c] {
			b.fields[c] = b.fields[c][:rows]
		}
	}
	return false
}

// textFields fills column c of the block, one take left empty (need), for
// checking: the fields of the rows that are not all ASCII, split again from
// their lines, and NULL for the others, whose text needs no check.
func (b *csvBlock) textFields(c int) {
	b.fields[c] = b.fields[c][:0]
	for r, line := range b.text {
		if b.ascii[r] {
			b.fields[c] = append(b.fields[c], nil)
			continue
		}
		b.rec.reset(b.line[r])
		b.rec.borrow(line, b.delim) // as take did
		f, quoted := b.rec.field(c)
		if len(f) == 0 && !quoted {
			f = nil
		} else if f == nil {
			f = []byte{} // an empty quoted field of an empty buf: not NULL
		}
		b.fields[c] = append(b.fields[c], f)
	}
}

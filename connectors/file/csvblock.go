package file

import (
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
	need   []bool
	fields [][][]byte // per column of the table, each row's field
	null   [][]bool   // per column of the table, whether each row's field is NULL
	ascii  []bool     // per row, whether it is all ASCII
	text   [][]byte   // per row, its line
	mixed  bool       // some row is not all ASCII
	delim  byte
	line   []int64 // per row, the number of its line in the reader's range
	size   []int   // per row, its bytes of input
	bad    []error // per row, its first fault (set by parsing; nil: good)
}

// newCSVBlock returns a block of records of a table of schema whose columns
// cols (positions in schema) the query reads.
func newCSVBlock(schema types.Schema, cols []int, delim byte) *csvBlock {
	b := &csvBlock{delim: delim, need: make([]bool, len(schema)), fields: make([][][]byte, len(schema)), null: make([][]bool, len(schema))}
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
		b.fields[c], b.null[c] = b.fields[c][:0], b.null[c][:0]
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
		ascii, ok := b.splitPlain(line)
		if !ok {
			r := &b.rec
			r.reset(lr.line)
			if !r.borrow(line, b.delim) || r.numFields() != len(b.fields) {
				lr.rewind(pos, lineNo)
				break
			}
			for c := range b.fields {
				if b.need[c] {
					f, quoted := r.field(c)
					b.fields[c] = append(b.fields[c], f)
					b.null[c] = append(b.null[c], len(f) == 0 && !quoted)
				}
			}
			ascii = r.ascii
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

// splitPlain appends the fields of line, a line without quotes, to the
// block's columns, as csvRecord.borrow splits it, and reports whether it is
// all ASCII. For a line with a quote, or with other than the table's number
// of fields, it returns ok=false, the block as it was. It reads the line
// eight bytes at a time and visits only the delimiters, as borrow does, but
// puts each field straight into its column.
func (b *csvBlock) splitPlain(line []byte) (ascii, ok bool) {
	dm, qm := swarOnes*uint64(b.delim), swarOnes*uint64('"')
	last := len(b.fields) - 1
	c, start := 0, 0 // the field being read, and where it starts
	put := func(end int) {
		if b.need[c] {
			b.fields[c] = append(b.fields[c], line[start:end])
			b.null[c] = append(b.null[c], end == start)
		}
		c, start = c+1, end+1
	}
	var high uint64
	i := 0
	for ; i+8 <= len(line); i += 8 {
		w := binary.LittleEndian.Uint64(line[i:])
		high |= w
		for m := swarZeros(w^dm) | swarZeros(w^qm); m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)>>3
			if line[j] != b.delim || c == last {
				return false, b.undo(c)
			}
			put(j)
		}
	}
	for j := i; j < len(line); j++ {
		high |= uint64(line[j])
		if line[j] == b.delim || line[j] == '"' {
			if line[j] != b.delim || c == last {
				return false, b.undo(c)
			}
			put(j)
		}
	}
	if c != last {
		return false, b.undo(c)
	}
	put(len(line))
	return high&swarHighs == 0, true
}

// undo drops the fields splitPlain put in the first n columns for the line it
// gives up on, and returns false.
func (b *csvBlock) undo(n int) bool {
	rows := b.rows()
	for c := range n {
		if b.need[c] {
			b.fields[c], b.null[c] = b.fields[c][:rows], b.null[c][:rows]
		}
	}
	return false
}

// textFields fills column c of the block, one take left empty (need), for
// checking: the fields of the rows that are not all ASCII, split again from
// their lines, and NULL for the others, whose text needs no check.
func (b *csvBlock) textFields(c int) {
	b.fields[c], b.null[c] = b.fields[c][:0], b.null[c][:0]
	for r, line := range b.text {
		if b.ascii[r] {
			b.fields[c] = append(b.fields[c], nil)
			b.null[c] = append(b.null[c], true)
			continue
		}
		b.rec.reset(b.line[r])
		b.rec.borrow(line, b.delim) // as take did
		f, quoted := b.rec.field(c)
		b.fields[c] = append(b.fields[c], f)
		b.null[c] = append(b.null[c], len(f) == 0 && !quoted)
	}
}

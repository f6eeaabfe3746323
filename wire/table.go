package wire

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/types"
)

// FormatTable writes batches, whose columns are schema's, as psql's default aligned
// output prints them (border 1, NULL shown as nothing), byte for byte: a header of
// centred column names, a separator line, the rows (numbers right-aligned, other
// values left-aligned, multi-line values continued with '+'), a "(n rows)" footer
// and a blank line. Like psql it expands tabs, escapes other control characters
// and counts East Asian wide characters as two columns.
func FormatTable(w io.Writer, schema types.Schema, batches []arrow.RecordBatch) error {
	ncols := len(schema)
	t := table{ncols: ncols, widths: make([]int, ncols), right: make([]bool, ncols)}

	header := make([]cell, ncols)
	for j, f := range schema {
		header[j] = t.cell(f.Name)
		t.right[j] = rightAligned(f.Type)
	}
	t.widen(header)
	var text []byte
	var rows [][]cell
	for _, b := range batches {
		if int(b.NumCols()) != ncols {
			return fmt.Errorf("wire: batch has %d columns, schema %d", b.NumCols(), ncols)
		}
		appenders := make([]textAppender, ncols)
		for j := range ncols {
			appenders[j] = appenderFor(b.Column(j), b.Schema().Field(j), nil)
		}
		for i := range int(b.NumRows()) {
			row := make([]cell, ncols)
			for j := range ncols {
				text = text[:0]
				if !IsNull(b.Column(j), i) {
					text = appenders[j](text, i)
				}
				row[j] = t.cell(string(text))
			}
			t.widen(row)
			rows = append(rows, row)
		}
	}

	bw := bufio.NewWriter(w)
	if ncols > 0 {
		t.writeHeader(bw, header)
	}
	t.writeRule(bw)
	if ncols > 0 {
		for _, row := range rows {
			t.writeRow(bw, row)
		}
	}
	if len(rows) == 1 {
		bw.WriteString("(1 row)\n\n")
	} else {
		bw.WriteString("(" + strconv.Itoa(len(rows)) + " rows)\n\n")
	}
	return bw.Flush()
}

// table holds what FormatTable knows about the columns.
type table struct {
	ncols  int
	widths []int  // display width of each column
	right  []bool // right-aligned columns
}

// cell is one value split into display lines.
type cell []line

type line struct {
	text  string
	width int
}

// cell splits s into display lines as psql's pg_wcsformat does.
func (t *table) cell(s string) cell {
	var c cell
	var buf []byte
	width := 0
	for _, r := range s {
		switch {
		case r == '\n':
			c = append(c, line{string(buf), width})
			buf, width = buf[:0], 0
		case r == '\r':
			buf = append(buf, `\r`...)
			width += 2
		case r == '\t':
			for {
				buf = append(buf, ' ')
				width++
				if width%8 == 0 {
					break
				}
			}
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			buf = fmt.Appendf(buf, `\x%02X`, r)
			width += 4
		default:
			buf = utf8.AppendRune(buf, r)
			width += runeWidth(r)
		}
	}
	return append(c, line{string(buf), width})
}

// widen grows the column widths to fit a row of cells.
func (t *table) widen(row []cell) {
	for j, c := range row {
		for _, l := range c {
			t.widths[j] = max(t.widths[j], l.width)
		}
	}
}

func spaces(w *bufio.Writer, n int) {
	for ; n > 0; n-- {
		w.WriteByte(' ')
	}
}

// writeHeader prints the centred column names, following psql's print_aligned_text.
func (t *table) writeHeader(w *bufio.Writer, header []cell) {
	for nl := 0; ; nl++ {
		more := false
		for j, c := range header {
			w.WriteByte(' ')
			done := nl >= len(c)
			if !done {
				pad := t.widths[j] - c[nl].width
				spaces(w, pad/2)
				w.WriteString(c[nl].text)
				spaces(w, (pad+1)/2)
				done = nl+1 >= len(c)
			} else {
				spaces(w, t.widths[j])
			}
			if done {
				w.WriteByte(' ')
			} else {
				w.WriteByte('+')
				more = true
			}
			if j < t.ncols-1 {
				w.WriteByte('|')
			}
		}
		w.WriteByte('\n')
		if !more {
			return
		}
	}
}

// writeRule prints the line under the header.
func (t *table) writeRule(w *bufio.Writer) {
	w.WriteByte('-')
	for j, width := range t.widths {
		for range width {
			w.WriteByte('-')
		}
		if j < t.ncols-1 {
			w.WriteString("-+-")
		}
	}
	w.WriteString("-\n")
}

// writeRow prints one row, on as many lines as its tallest cell needs.
func (t *table) writeRow(w *bufio.Writer, row []cell) {
	for nl := 0; ; nl++ {
		more := false
		for j, c := range row {
			last := j == t.ncols-1
			w.WriteByte(' ')
			chars := t.widths[j]
			if nl < len(c) {
				l := c[nl]
				chars = l.width
				if t.right[j] {
					spaces(w, t.widths[j]-chars)
				}
				w.WriteString(l.text)
			} else if !last {
				spaces(w, t.widths[j])
			}
			cont := nl+1 < len(c) // the value goes on on the next line
			more = more || cont
			if !t.right[j] && (!last || cont) {
				spaces(w, t.widths[j]-chars)
			}
			switch {
			case cont:
				w.WriteByte('+')
			case !last:
				w.WriteByte(' ')
			}
			if !last {
				w.WriteByte('|')
			}
		}
		w.WriteByte('\n')
		if !more {
			return
		}
	}
}

// runeWidth is the number of terminal columns r takes, as psql's ucs_wcwidth
// counts them: 0 for combining marks, 2 for East Asian wide and fullwidth
// characters (the common blocks; psql's own table is longer), 1 otherwise.
func runeWidth(r rune) int {
	if r < 0x300 {
		return 1
	}
	if unicode.In(r, unicode.Mn, unicode.Me) || r == 0x200b {
		return 0
	}
	for _, rg := range wideRanges {
		if r < rg[0] {
			break
		}
		if r <= rg[1] {
			return 2
		}
	}
	return 1
}

// wideRanges are the East Asian Wide and Fullwidth blocks, sorted.
var wideRanges = [][2]rune{
	{0x1100, 0x115f}, // Hangul Jamo initials
	{0x231a, 0x231b}, // watch, hourglass
	{0x2329, 0x232a}, // angle brackets
	{0x23e9, 0x23ec},
	{0x23f0, 0x23f0},
	{0x23f3, 0x23f3},
	{0x25fd, 0x25fe},
	{0x2614, 0x2615},
	{0x2648, 0x2653}, // zodiac
	{0x267f, 0x267f},
	{0x2693, 0x2693},
	{0x26a1, 0x26a1},
	{0x26aa, 0x26ab},
	{0x26bd, 0x26be},
	{0x26c4, 0x26c5},
	{0x26ce, 0x26ce},
	{0x26d4, 0x26d4},
	{0x26ea, 0x26ea},
	{0x26f2, 0x26f3},
	{0x26f5, 0x26f5},
	{0x26fa, 0x26fa},
	{0x26fd, 0x26fd},
	{0x2705, 0x2705},
	{0x270a, 0x270b},
	{0x2728, 0x2728},
	{0x274c, 0x274c},
	{0x274e, 0x274e},
	{0x2753, 0x2755},
	{0x2757, 0x2757},
	{0x2795, 0x2797},
	{0x27b0, 0x27b0},
	{0x27bf, 0x27bf},
	{0x2b1b, 0x2b1c},
	{0x2b50, 0x2b50},
	{0x2b55, 0x2b55},
	{0x2e80, 0x303e}, // CJK radicals, punctuation
	{0x3041, 0x33ff}, // kana, CJK compatibility
	{0x3400, 0x4dbf}, // CJK extension A
	{0x4e00, 0x9fff}, // CJK unified ideographs
	{0xa000, 0xa4cf}, // Yi
	{0xa960, 0xa97f}, // Hangul Jamo extended A
	{0xac00, 0xd7a3}, // Hangul syllables
	{0xf900, 0xfaff}, // CJK compatibility ideographs
	{0xfe10, 0xfe19}, // vertical forms
	{0xfe30, 0xfe6f}, // CJK compatibility forms, small forms
	{0xff00, 0xff60}, // fullwidth forms
	{0xffe0, 0xffe6}, // fullwidth signs
	{0x16fe0, 0x16fe4},
	{0x17000, 0x18cff}, // Tangut
	{0x1b000, 0x1b2ff}, // kana supplement, Nushu
	{0x1f004, 0x1f004},
	{0x1f0cf, 0x1f0cf},
	{0x1f18e, 0x1f18e},
	{0x1f191, 0x1f19a},
	{0x1f200, 0x1f251}, // enclosed ideographic supplement
	{0x1f300, 0x1f320}, // emoji
	{0x1f32d, 0x1f335},
	{0x1f337, 0x1f37c},
	{0x1f37e, 0x1f393},
	{0x1f3a0, 0x1f3ca},
	{0x1f3cf, 0x1f3d3},
	{0x1f3e0, 0x1f3f0},
	{0x1f3f4, 0x1f3f4},
	{0x1f3f8, 0x1f43e},
	{0x1f440, 0x1f440},
	{0x1f442, 0x1f4fc},
	{0x1f4ff, 0x1f53d},
	{0x1f54b, 0x1f54e},
	{0x1f550, 0x1f567},
	{0x1f57a, 0x1f57a},
	{0x1f595, 0x1f596},
	{0x1f5a4, 0x1f5a4},
	{0x1f5fb, 0x1f64f},
	{0x1f680, 0x1f6c5}, // transport
	{0x1f6cc, 0x1f6cc},
	{0x1f6d0, 0x1f6d2},
	{0x1f6d5, 0x1f6d7},
	{0x1f6eb, 0x1f6ec},
	{0x1f6f4, 0x1f6fc},
	{0x1f7e0, 0x1f7eb},
	{0x1f90c, 0x1f93a}, // supplemental symbols
	{0x1f93c, 0x1f945},
	{0x1f947, 0x1f9ff},
	{0x1fa70, 0x1faff}, // symbols extended A
	{0x20000, 0x2fffd}, // CJK extensions B-F
	{0x30000, 0x3fffd}, // CJK extension G
}

package operators

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// unnestOp is kind "unnest" (see UnnestConfig): the text column Col is replaced
// by one row per piece of its split, the other columns (and the change kind)
// repeated. A NULL string gives no rows.
//
// Semantics, matched to the systems the SQL spellings come from:
//
//   - string_split (DuckDB): split on every occurrence of the literal Sep, empty
//     pieces kept ('a,,b' -> 'a', ”, 'b'; 'a,' -> 'a', ”); ” gives one row
//     ”. An empty Sep splits into UTF-8 characters ('abc' -> 'a', 'b', 'c';
//     ” -> ”).
//   - regexp_split_to_table (PostgreSQL): pieces between matches of the regular
//     expression Sep. As in PostgreSQL, zero-length matches at the start or end
//     of the string or right after a match are ignored, a match at the start
//     gives a leading ” (' a b' on '[[:space:]]+' -> ”, 'a', 'b') and ” gives
//     one row ”. '.' matches newlines, as in PostgreSQL's default mode.
//     Patterns run on Go's RE2, which reads the POSIX classes ([[:space:]]) and
//     Perl escapes but not PostgreSQL's own (\m, \y, ...), and is leftmost-first
//     where PostgreSQL's ARE engine may prefer the longest match.
//
// Fast paths, which need no regular expression engine: a literal pattern; a
// class of ASCII bytes ('[,;]'); a run of such a class ('[[:space:]]+', '\s+',
// ' +'). For '\s' the class is PostgreSQL's [[:space:]] (with \v), which is
// also Go's [[:space:]]; only ASCII whitespace counts as space (PostgreSQL
// also treats Unicode spaces as [[:space:]] in a UTF-8 locale).
//
// The hot path (WordCount) writes every piece of a batch into one data buffer
// sized by the input's string bytes (pieces never overlap, so they cannot
// exceed it), with offsets and the repeat-index vector in reusable scratch
// slices: no allocation per piece.
type unnestOp struct {
	col   int
	split func(w *pieceWriter, row int32, s []byte)
	out   *arrow.Schema
	mem   memory.Allocator
	w     pieceWriter
}

var _ exec.Operator = (*unnestOp)(nil)

func newUnnestOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg UnnestConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("unnest: bad config: %w", err)
	}
	split, err := splitterFor(cfg.Func, cfg.Sep)
	if err != nil {
		return nil, err
	}
	if cfg.Col < 0 || cfg.Col >= len(spec.Out) {
		return nil, fmt.Errorf("unnest: column %d out of range of %d output columns", cfg.Col, len(spec.Out))
	}
	if cfg.MinBytes < 0 || cfg.MinChars < 0 {
		return nil, fmt.Errorf("unnest: negative minimum piece length")
	}
	// A piece has at least as many bytes as characters.
	w := pieceWriter{minBytes: max(cfg.MinBytes, cfg.MinChars), minChars: cfg.MinChars}
	return &unnestOp{col: cfg.Col, split: split, out: spec.Out.Arrow(), w: w}, nil
}

// pieceWriter collects the pieces of one batch.
type pieceWriter struct {
	data []byte  // output string bytes
	pos  int32   // bytes used in data
	offs []int32 // offs[k+1] is the end of piece k
	rep  []int32 // rep[k] is the input row of piece k, when keepRows
	// keepRows is set when other columns or change kinds must be repeated per
	// piece; a batch of the split column alone (WordCount's) needs no rep.
	keepRows bool
	// Pieces of fewer bytes than minBytes, or characters than minChars, are
	// dropped (UnnestConfig): piece drops the short ones in bytes at once,
	// dropFewerChars those of multi-byte characters after the split.
	minBytes, minChars int
}

func (w *pieceWriter) piece(row int32, p []byte) {
	if len(p) < w.minBytes {
		return
	}
	pos := int(w.pos)
	if len(p) <= 8 && cap(p) >= 8 && pos+8 <= cap(w.data) {
		// Most words: one 8-byte load and store instead of a memmove call. The
		// bytes past the piece are scratch that the next piece overwrites
		// (both buffers have the room: Arrow pads buffers to 64 bytes).
		binary.LittleEndian.PutUint64(w.data[pos:pos+8], binary.LittleEndian.Uint64(p[:8]))
	} else {
		copy(w.data[pos:], p) // data holds the whole input batch's bytes
	}
	pos += len(p)
	w.pos = int32(pos)
	w.offs = append(w.offs, w.pos)
	if w.keepRows {
		w.rep = append(w.rep, row)
	}
}

// dropFewerChars drops the pieces of fewer than k characters, moving the
// others down. Pieces have at least k bytes already (minBytes), so only those
// with multi-byte characters can go: a batch of ASCII pieces is left as is.
func (w *pieceWriter) dropFewerChars(k int) {
	if asciiOnly(w.data[:w.pos]) {
		return
	}
	out, pos, lo := 1, int32(0), w.offs[0]
	for i := 1; i < len(w.offs); i++ {
		hi := w.offs[i] // read before offs[out <= i] is overwritten
		p := w.data[lo:hi]
		lo = hi
		if !hasChars(p, k) {
			continue
		}
		pos += int32(copy(w.data[pos:], p))
		w.offs[out] = pos
		if w.keepRows {
			w.rep[out-1] = w.rep[i-1]
		}
		out++
	}
	w.offs, w.pos = w.offs[:out], pos
	if w.keepRows {
		w.rep = w.rep[:out-1]
	}
}

// asciiOnly reports whether b holds only ASCII bytes, eight at a time.
func asciiOnly(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasChars reports whether p, of at least k bytes, holds at least k UTF-8
// characters: always when it is ASCII or four bytes per character long.
func hasChars(p []byte, k int) bool {
	if len(p) >= utf8.UTFMax*k {
		return true
	}
	for _, c := range p {
		if c >= utf8.RuneSelf {
			return utf8.RuneCount(p) >= k
		}
	}
	return true
}

// splitterFor returns the function that splits one string for fn and sep.
func splitterFor(fn, sep string) (func(w *pieceWriter, row int32, s []byte), error) {
	switch fn {
	case "string_split":
		if sep == "" {
			return splitChars, nil
		}
		return literalSplitter(sep), nil
	case "regexp_split_to_table":
		re, err := syntax.Parse(sep, syntax.Perl)
		if err != nil {
			return nil, fmt.Errorf("unnest: invalid regular expression %q: %w", sep, err)
		}
		if f := fastRegexpSplitter(re.Simplify()); f != nil {
			return f, nil
		}
		// PostgreSQL's default (non newline-sensitive) mode: '.' matches '\n'.
		cre, err := regexp.Compile("(?s)" + sep)
		if err != nil {
			return nil, fmt.Errorf("unnest: invalid regular expression %q: %w", sep, err)
		}
		return func(w *pieceWriter, row int32, s []byte) { splitRegexp(w, row, s, cre) }, nil
	}
	return nil, fmt.Errorf("unnest: unknown function %q", fn)
}

// fastRegexpSplitter returns a splitter that needs no regexp engine for re, or nil.
func fastRegexpSplitter(re *syntax.Regexp) func(w *pieceWriter, row int32, s []byte) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return splitChars
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return literalSplitter(string(re.Rune))
		}
	case syntax.OpCharClass:
		if set, ok := asciiSet(re); ok {
			return func(w *pieceWriter, row int32, s []byte) { splitByteSet(w, row, s, set) }
		}
	case syntax.OpPlus:
		if set, ok := asciiSet(re.Sub[0]); ok {
			return func(w *pieceWriter, row int32, s []byte) { splitByteRuns(w, row, s, set) }
		}
	}
	return nil
}

// asciiSet returns the bytes a one-character regexp matches, when they are all
// ASCII. Go's \s lacks \v; PostgreSQL's \s is [[:space:]], which has it.
func asciiSet(re *syntax.Regexp) (*[256]bool, bool) {
	var set [256]bool
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) != 1 || re.Rune[0] >= 0x80 || re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		set[re.Rune[0]] = true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= 0x80 {
				return nil, false
			}
			for r := lo; r <= hi; r++ {
				set[r] = true
			}
		}
		goSpace := true
		for b := range 128 {
			want := b == '\t' || b == '\n' || b == '\f' || b == '\r' || b == ' '
			if set[b] != want {
				goSpace = false
				break
			}
		}
		if goSpace {
			set['\v'] = true
		}
	default:
		return nil, false
	}
	return &set, true
}

// literalSplitter splits on every occurrence of sep (not empty).
func literalSplitter(sep string) func(w *pieceWriter, row int32, s []byte) {
	if len(sep) == 1 {
		c := sep[0]
		return func(w *pieceWriter, row int32, s []byte) { splitByte(w, row, s, c) }
	}
	bsep := []byte(sep)
	return func(w *pieceWriter, row int32, s []byte) {
		for {
			i := bytes.Index(s, bsep)
			if i < 0 {
				break
			}
			w.piece(row, s[:i])
			s = s[i+len(bsep):]
		}
		w.piece(row, s)
	}
}

// splitByteSet splits at every byte in set.
func splitByteSet(w *pieceWriter, row int32, s []byte, set *[256]bool) {
	start := 0
	for j, c := range s {
		if set[c] {
			w.piece(row, s[start:j])
			start = j + 1
		}
	}
	w.piece(row, s[start:])
}

// splitByte splits at every byte c, finding them eight bytes at a time: x is
// zero exactly in the bytes equal to c, and the SWAR test below sets the high
// bit of exactly those bytes (the add cannot carry across bytes because the low
// seven bits are masked first).
func splitByte(w *pieceWriter, row int32, s []byte, c byte) {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	rep := uint64(c) * 0x0101010101010101
	start, i := 0, 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:]) ^ rep
		m := ^(((x & lo7) + lo7) | x | lo7) & hi
		for m != 0 {
			j := i + bits.TrailingZeros64(m)>>3
			w.piece(row, s[start:j])
			start = j + 1
			m &= m - 1
		}
	}
	for ; i < len(s); i++ {
		if s[i] == c {
			w.piece(row, s[start:i])
			start = i + 1
		}
	}
	w.piece(row, s[start:])
}

// splitByteRuns splits at every run of bytes in set, PostgreSQL-style: a run at
// the start gives a leading ”, one at the end a trailing ”.
func splitByteRuns(w *pieceWriter, row int32, s []byte, set *[256]bool) {
	start, j, n := 0, 0, len(s)
	for j < n {
		if !set[s[j]] {
			j++
			continue
		}
		w.piece(row, s[start:j])
		j++
		for j < n && set[s[j]] {
			j++
		}
		start = j
	}
	w.piece(row, s[start:])
}

// splitChars splits into UTF-8 characters (a character starts at every byte that
// is not a continuation byte); ” gives ”.
func splitChars(w *pieceWriter, row int32, s []byte) {
	if len(s) == 0 {
		w.piece(row, s)
		return
	}
	start := 0
	for j := 1; j < len(s); j++ {
		if s[j]&0xc0 != 0x80 {
			w.piece(row, s[start:j])
			start = j
		}
	}
	w.piece(row, s[start:])
}

// splitRegexp is the general PostgreSQL split. Go's FindAll already drops an
// empty match right after a match; PostgreSQL also drops an empty match at the
// very start and at the very end of the string.
func splitRegexp(w *pieceWriter, row int32, s []byte, re *regexp.Regexp) {
	start := 0
	for _, m := range re.FindAllIndex(s, -1) {
		if m[1] == 0 || m[0] >= len(s) {
			continue
		}
		w.piece(row, s[start:m[0]])
		start = m[1]
	}
	w.piece(row, s[start:])
}

func (o *unnestOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return nil
}

func (o *unnestOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	rec := b.Rec
	if o.col >= int(rec.NumCols()) || int(rec.NumCols()) != o.out.NumFields() {
		return fmt.Errorf("unnest: input has %d columns, want %d", rec.NumCols(), o.out.NumFields())
	}
	str, ok := rec.Column(o.col).(*array.String)
	if !ok {
		return fmt.Errorf("unnest: column %d is %s, not text", o.col, rec.Column(o.col).DataType())
	}
	offs := str.ValueOffsets()
	var data []byte
	if buf := str.Data().Buffers()[2]; buf != nil {
		data = buf.Bytes()
	}
	size := int(offs[n] - offs[0])
	db := vector.NewBuffer(o.mem, size)
	defer db.Release()
	w := &o.w
	w.data, w.pos = db.Bytes(), 0
	w.offs = append(w.offs[:0], 0)
	w.rep = w.rep[:0]
	w.keepRows = rec.NumCols() > 1 || b.Ops != nil
	valid, voff := vector.ValidityOf(str)
	for i := range n {
		if valid != nil && !bitutil.BitIsSet(valid, voff+i) {
			continue
		}
		o.split(w, int32(i), data[offs[i]:offs[i+1]])
	}
	if w.minChars > 1 {
		w.dropFewerChars(w.minChars)
	}
	w.data = nil
	k := len(w.offs) - 1
	if k == 0 {
		return nil
	}
	if k > math.MaxInt32-1 {
		return fmt.Errorf("unnest: %d pieces in one batch", k)
	}
	ob := vector.NewBuffer(o.mem, (k+1)*4)
	copy(arrow.Int32Traits.CastFromBytes(ob.Bytes()), w.offs)
	db.ResizeNoShrink(int(w.pos))
	ad := array.NewData(arrow.BinaryTypes.String, k, []*memory.Buffer{nil, ob, db}, nil, 0, 0)
	ob.Release()
	pieces := array.NewStringData(ad)
	ad.Release()

	cols := make([]arrow.Array, rec.NumCols())
	for j, c := range rec.Columns() {
		if j == o.col {
			continue
		}
		g, err := vector.GatherArray(o.mem, c, w.rep)
		if err != nil {
			pieces.Release()
			vector.ReleaseArrays(cols)
			return fmt.Errorf("unnest: %w", err)
		}
		cols[j] = g
	}
	cols[o.col] = pieces
	out2, err := vector.MakeRecord(o.out, cols, k)
	if err != nil {
		return fmt.Errorf("unnest: %w", err)
	}
	defer out2.Release()
	var ops []exec.ChangeKind
	if b.Ops != nil {
		ops = vector.GatherOps(b.Ops, w.rep)
	}
	return out.Collect(ctx, exec.Batch{Rec: out2, Ops: ops})
}

func (o *unnestOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *unnestOp) Close(ctx context.Context) error {
	o.w = pieceWriter{}
	return nil
}

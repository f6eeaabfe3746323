// Package wc is the hand-written WordCount that the benchmark uses as the machine's
// practical limit: one pass over the bytes, lower-casing and splitting on ' ' as it
// goes, counting into an open-addressing hash table per goroutine, merging at the end.
// It knows nothing of SQL, Arrow or Unicode, which is the point: an engine that runs
// the WordCount query cannot do less work than this.
package wc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strconv"
	"sync"
)

// blockSize is what a worker reads per pread. The file is read, not mapped, so that
// peak RSS counts the counter's own memory and not the page cache, as it does for the
// engines it is compared with.
const blockSize = 1 << 20

// The hash multiplier (2^64 / golden ratio): multiplying moves a key's entropy into the
// high bits, which pick the slot (Fibonacci hashing).
const golden = 0x9E3779B97F4A7C15

// lower maps ASCII upper case to lower case and every other byte to itself, as
// lower() does on ASCII text.
var lower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c + 'a' - 'A')
	}
	return t
}()

// isSep reports the bytes that end a word: the query splits lines on ' ', and lines
// end at '\n', so both end a word.
func isSep(c byte) bool { return c == ' ' || c == '\n' }

// low[n] keeps the first n bytes of a little-endian word.
var low = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, ^uint64(0)}

type slot struct {
	head  uint64 // the word's first 8 bytes, zero-padded: most words are compared by it alone
	off   uint32 // the word is keys[off : off+len]
	len   uint32
	count int64 // 0: the slot is empty
}

// Table counts words. Its zero value is not usable: make one with NewTable.
type Table struct {
	slots []slot // len is a power of two
	shift uint   // 64 - log2(len(slots)): a hash's top bits pick its slot
	keys  []byte // every distinct word, back to back
	n     int    // occupied slots
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{slots: make([]slot, 1<<14), shift: 64 - 14, keys: make([]byte, 0, 1<<16)}
}

// Len returns the number of distinct words.
func (t *Table) Len() int { return t.n }

// load8 returns the first min(8, len(w)) bytes of w as a zero-padded little-endian word.
func load8(w []byte) uint64 {
	if len(w) >= 8 {
		return binary.LittleEndian.Uint64(w)
	}
	var x uint64
	for i := len(w) - 1; i >= 0; i-- {
		x = x<<8 | uint64(w[i])
	}
	return x
}

// hashKey hashes a word 8 bytes at a time. For a word of at most 8 bytes it equals
// (len ^ head) * golden, which is what the scan loop computes inline.
func hashKey(w []byte) uint64 {
	h := uint64(len(w))
	for len(w) > 8 {
		h = bits.RotateLeft64((h^binary.LittleEndian.Uint64(w))*golden, 31)
		w = w[8:]
	}
	return (h ^ load8(w)) * golden
}

// addShort counts one occurrence of the word of n <= 8 bytes whose bytes are head.
func (t *Table) addShort(head uint64, n int) {
	mask := uint64(len(t.slots) - 1)
	for i := ((uint64(n) ^ head) * golden) >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.head == head && s.len == uint32(n) && s.count != 0 {
			s.count++
			return
		}
		if s.count == 0 {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], head)
			t.insert(s, b[:n], head, 1)
			return
		}
	}
}

// add counts n occurrences of w.
func (t *Table) add(w []byte, n int64) {
	head := load8(w)
	mask := uint64(len(t.slots) - 1)
	for i := hashKey(w) >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.count == 0 {
			t.insert(s, w, head, n)
			return
		}
		if s.head == head && int(s.len) == len(w) && (len(w) <= 8 || bytes.Equal(t.keys[s.off+8:s.off+s.len], w[8:])) {
			s.count += n
			return
		}
	}
}

// insert fills the empty slot s with w.
func (t *Table) insert(s *slot, w []byte, head uint64, n int64) {
	if len(t.keys)+len(w) > 1<<32-1 {
		panic("wc: more than 4 GiB of distinct words")
	}
	*s = slot{head: head, off: uint32(len(t.keys)), len: uint32(len(w)), count: n}
	t.keys = append(t.keys, w...)
	t.n++
	if 2*t.n > len(t.slots) {
		t.grow()
	}
}

func (t *Table) grow() {
	old := t.slots
	t.slots = make([]slot, 2*len(old))
	t.shift--
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.count == 0 {
			continue
		}
		i := hashKey(t.keys[s.off:s.off+s.len]) >> t.shift
		for t.slots[i].count != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// SWAR constants: each repeats one byte eight times.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	sevns = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes sets the high bit of exactly the zero bytes of x (no false positives,
// unlike the shorter haszero trick, so each set bit is a real separator).
func zeroBytes(x uint64) uint64 {
	return ^(((x & sevns) + sevns) | x | sevns)
}

// lower8 lower-cases the ASCII letters among the 8 bytes of x.
func lower8(x uint64) uint64 {
	h := x & sevns
	upper := (h + ones*(0x80-'A')) &^ (h + ones*(0x80-'Z'-1)) &^ x & highs
	return x | upper>>2 // 0x80 >> 2 == 'a' - 'A'
}

// scan lower-cases b in place and counts every word in it that a separator ends. It
// returns where the unfinished last word starts (len(b) if there is none), so the
// caller can carry those bytes over to the next block. It works 8 bytes at a time:
// lower-casing and finding separators in registers, then visiting only the separators.
func (t *Table) scan(b []byte) int {
	start, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		x := lower8(binary.LittleEndian.Uint64(b[i:]))
		binary.LittleEndian.PutUint64(b[i:], x)
		for seps := zeroBytes(x^ones*' ') | zeroBytes(x^ones*'\n'); seps != 0; seps &= seps - 1 {
			start = t.word(b, start, i+bits.TrailingZeros64(seps)/8)
		}
	}
	for ; i < len(b); i++ {
		b[i] = lower[b[i]]
		if isSep(b[i]) {
			start = t.word(b, start, i)
		}
	}
	return start
}

// word counts b[start:end] if it is not empty and returns where the next word starts.
// b[start:end] is lower-cased already.
func (t *Table) word(b []byte, start, end int) int {
	switch n := end - start; {
	case n == 0:
	case n <= 8 && start+8 <= len(b):
		// Bytes past the word are masked off, lower-cased yet or not.
		t.addShort(binary.LittleEndian.Uint64(b[start:])&low[n], n)
	default:
		t.add(b[start:end], 1)
	}
	return end + 1
}

// Merge adds every count of o to t.
func (t *Table) Merge(o *Table) {
	for _, s := range o.slots {
		if s.count != 0 {
			t.add(o.keys[s.off:s.off+s.len], s.count)
		}
	}
}

// Each calls f for every word and its count, in no particular order. The word is only
// valid during the call.
func (t *Table) Each(f func(word []byte, n int64)) {
	for _, s := range t.slots {
		if s.count != 0 {
			f(t.keys[s.off:s.off+s.len], s.count)
		}
	}
}

// WriteTo writes one "word count" line per word: the format every contender of the
// benchmark prints.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	var written int64
	var err error
	t.Each(func(word []byte, n int64) {
		if err != nil {
			return
		}
		line = append(append(line[:0], word...), ' ')
		line = append(strconv.AppendInt(line, n, 10), '\n')
		var k int
		k, err = bw.Write(line)
		written += int64(k)
	})
	if err != nil {
		return written, err
	}
	return written, bw.Flush()
}

// CountReader counts the words of r in one goroutine.
func CountReader(r io.Reader) (*Table, error) {
	t := NewTable()
	buf := make([]byte, blockSize)
	carry := 0
	for {
		if carry == len(buf) { // one word fills the buffer
			buf = append(buf, make([]byte, len(buf))...)
		}
		n, err := r.Read(buf[carry:])
		end := carry + n
		if errors.Is(err, io.EOF) {
			rest := t.scan(buf[:end])
			if rest < end {
				t.add(buf[rest:end], 1)
			}
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		rest := t.scan(buf[:end])
		carry = copy(buf, buf[rest:end])
	}
}

// CountFile counts the words of the file at path with workers goroutines, each
// reading its own line-aligned byte range, and returns the merged table.
func CountFile(path string, workers int) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if workers < 1 {
		workers = 1
	}
	bounds := make([]int64, workers+1)
	bounds[workers] = size
	for k := 1; k < workers; k++ {
		if bounds[k], err = lineStart(f, size*int64(k)/int64(workers), size); err != nil {
			return nil, err
		}
		bounds[k] = max(bounds[k], bounds[k-1])
	}
	tables := make([]*Table, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Go(func() {
			tables[k], errs[k] = CountReader(io.NewSectionReader(f, bounds[k], bounds[k+1]-bounds[k]))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("wc: %s: %w", path, err)
	}
	for _, t := range tables[1:] {
		tables[0].Merge(t)
	}
	return tables[0], nil
}

// lineStart returns the offset of the first line that starts at or after off.
func lineStart(f *os.File, off, size int64) (int64, error) {
	if off == 0 {
		return 0, nil
	}
	buf := make([]byte, 4096)
	for pos := off - 1; pos < size; pos += int64(len(buf)) {
		n, err := f.ReadAt(buf, pos)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
	}
	return size, nil
}

package operators

import "bytes"

// topnList is a partition's entries in order of (key, seq): a list of
// sorted chunks of at most 2*topnChunk entries, so that inserting or
// deleting an entry moves at most a chunk's entries, not the partition's. A
// partition over an input that retracts keeps all its rows: one slice would
// make a partition of n rows cost O(n^2) to build. Positions are the
// entries' positions in the whole list; finding one walks the chunks, and
// its number as a row number or rank is its position plus one.
type topnList struct {
	chunks [][]topnEntry
	n      int
}

const topnChunk = 256

func (l *topnList) Len() int { return l.n }

// locate returns the chunk and the offset in it of position pos (pos ==
// Len: the end of the last chunk).
func (l *topnList) locate(pos int) (int, int) {
	for c, ch := range l.chunks {
		if pos < len(ch) || c == len(l.chunks)-1 {
			return c, pos
		}
		pos -= len(ch)
	}
	return 0, 0
}

// At returns the entry at position pos.
func (l *topnList) At(pos int) *topnEntry {
	c, i := l.locate(pos)
	return &l.chunks[c][i]
}

// Last returns the last entry; the list must not be empty.
func (l *topnList) Last() *topnEntry {
	ch := l.chunks[len(l.chunks)-1]
	return &ch[len(ch)-1]
}

// bound returns the position of the first entry whose key is after key
// (upper) or not before it (!upper).
func (l *topnList) bound(key []byte, upper bool) int {
	after := func(e *topnEntry) bool {
		c := bytes.Compare(e.key, key)
		return c > 0 || !upper && c == 0
	}
	pos := 0
	for _, ch := range l.chunks {
		if !after(&ch[len(ch)-1]) {
			pos += len(ch)
			continue
		}
		lo, hi := 0, len(ch)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if after(&ch[m]) {
				hi = m
			} else {
				lo = m + 1
			}
		}
		return pos + lo
	}
	return pos
}

// Insert puts e at position pos.
func (l *topnList) Insert(pos int, e topnEntry) {
	l.n++
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, []topnEntry{e})
		return
	}
	c, i := l.locate(pos)
	ch := append(l.chunks[c], topnEntry{})
	copy(ch[i+1:], ch[i:])
	ch[i] = e
	if len(ch) <= 2*topnChunk {
		l.chunks[c] = ch
		return
	}
	// Split in two halves, each with room to grow.
	second := append(make([]topnEntry, 0, 2*topnChunk), ch[topnChunk:]...)
	clear(ch[topnChunk:])
	l.chunks[c] = ch[:topnChunk]
	l.chunks = append(l.chunks, nil)
	copy(l.chunks[c+2:], l.chunks[c+1:])
	l.chunks[c+1] = second
}

// Delete removes the entry at position pos.
func (l *topnList) Delete(pos int) {
	c, i := l.locate(pos)
	ch := l.chunks[c]
	copy(ch[i:], ch[i+1:])
	ch[len(ch)-1] = topnEntry{}
	ch = ch[:len(ch)-1]
	l.n--
	if len(ch) == 0 {
		l.chunks = append(l.chunks[:c], l.chunks[c+1:]...)
		return
	}
	l.chunks[c] = ch
	// A small chunk joins the next when both fit in one: deletes leave no
	// long run of near-empty chunks for locate to walk.
	if len(ch) < topnChunk/4 && c+1 < len(l.chunks) && len(ch)+len(l.chunks[c+1]) <= topnChunk {
		l.chunks[c] = append(ch, l.chunks[c+1]...)
		l.chunks = append(l.chunks[:c+1], l.chunks[c+2:]...)
	}
}

// Truncate keeps the first n entries, calling drop with each other one.
func (l *topnList) Truncate(n int, drop func(e *topnEntry)) {
	if n >= l.n {
		return
	}
	c, i := l.locate(n)
	for k := c; k < len(l.chunks); k++ {
		from := 0
		if k == c {
			from = i
		}
		for j := from; j < len(l.chunks[k]); j++ {
			drop(&l.chunks[k][j])
			l.chunks[k][j] = topnEntry{}
		}
	}
	l.chunks[c] = l.chunks[c][:i]
	clear(l.chunks[c+1:])
	l.chunks = l.chunks[:c+1]
	if i == 0 {
		l.chunks = l.chunks[:c]
	}
	l.n = n
}

// Each calls f with each entry, in order, while it returns true.
func (l *topnList) Each(f func(pos int, e *topnEntry) bool) { l.EachFrom(0, f) }

// EachFrom calls f with each entry from position from on, in order, while
// it returns true: the chunks before from are skipped, not walked entry by
// entry.
func (l *topnList) EachFrom(from int, f func(pos int, e *topnEntry) bool) {
	if from >= l.n {
		return
	}
	c, i := l.locate(from)
	pos := from
	for _, ch := range l.chunks[c:] {
		for j := i; j < len(ch); j++ {
			if !f(pos, &ch[j]) {
				return
			}
			pos++
		}
		i = 0
	}
}

// Append adds e after the last entry (its key and seq are not before it).
func (l *topnList) Append(e topnEntry) { l.Insert(l.n, e) }

// Clear empties the list.
func (l *topnList) Clear() { *l = topnList{} }

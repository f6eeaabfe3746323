// Package counts checks WordCount results: a reference counter written to be obviously
// right rather than fast, and a Digest that any contender's result folds into, so a
// contender that drops, splits or miscounts words cannot look fast.
package counts

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
)

// Digest summarises a WordCount result: the number of distinct words, the number of
// words, and an order-independent hash of every (word, count) pair. Two results with
// equal digests hold the same pairs, barring a 64-bit collision.
type Digest struct {
	Distinct int64  `json:"distinct"`
	Total    int64  `json:"total"`
	Hash     uint64 `json:"hash"`
}

// Add folds one result row into d. A word that appears twice changes Distinct and Hash,
// as it should: a correct GROUP BY emits each word once.
func (d *Digest) Add(word string, n int64) {
	h := fnv.New64a()
	h.Write([]byte(word))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, n, 10))
	// Summing keeps the digest independent of row order; the mix spreads FNV's
	// weak high bits so sums of similar rows do not cancel.
	d.Hash += mix(h.Sum64())
	d.Distinct++
	d.Total += n
}

func mix(x uint64) uint64 { // splitmix64's finaliser
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func (d Digest) String() string {
	return fmt.Sprintf("%d distinct, %d words, hash %016x", d.Distinct, d.Total, d.Hash)
}

// Of returns the digest of a word -> count map.
func Of(m map[string]int64) Digest {
	var d Digest
	for w, n := range m {
		d.Add(w, n)
	}
	return d
}

// Reference counts the words of the file at path the way the benchmark's query
// defines them: each line lower-cased and split on ' ', empty strings dropped.
func Reference(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := make(map[string]int64)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		for _, w := range strings.Split(strings.ToLower(sc.Text()), " ") {
			if w != "" {
				m[w]++
			}
		}
	}
	return m, sc.Err()
}

// Upper returns the counts grouped by upper(word): the expected result of the
// benchmark's GROUP BY upper(word) variant.
func Upper(m map[string]int64) map[string]int64 {
	u := make(map[string]int64, len(m))
	for w, n := range m {
		u[strings.ToUpper(w)] += n
	}
	return u
}

// LongerThan returns the counts of the words of more than k characters: the expected
// result of the benchmark's WHERE length(word) > k variant.
func LongerThan(m map[string]int64, k int) map[string]int64 {
	l := make(map[string]int64, len(m))
	for w, n := range m {
		if len([]rune(w)) > k {
			l[w] = n
		}
	}
	return l
}

// ParseLines digests output of "word count" lines, the format the benchmark's
// subprocess contenders print. The count follows the last space, so a word could hold
// spaces (none does: the query splits on them).
func ParseLines(out []byte) (Digest, error) {
	var d Digest
	for len(out) > 0 {
		line := out
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			line, out = out[:i], out[i+1:]
		} else {
			out = nil
		}
		if len(line) == 0 {
			continue
		}
		sp := bytes.LastIndexByte(line, ' ')
		if sp < 0 {
			return Digest{}, fmt.Errorf("counts: line %q is not \"word count\"", line)
		}
		n, err := strconv.ParseInt(string(line[sp+1:]), 10, 64)
		if err != nil {
			return Digest{}, fmt.Errorf("counts: line %q: %w", line, err)
		}
		d.Add(string(line[:sp]), n)
	}
	return d, nil
}

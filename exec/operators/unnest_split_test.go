package operators

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSplitByteMatchesStrings checks the eight-bytes-at-a-time splitter against
// strings.Split on random strings, so separators fall in every position of a word.
func TestSplitByteMatchesStrings(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := "ab ,"
	for n := 0; n < 2000; n++ {
		b := make([]byte, r.IntN(50))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		for _, sep := range []byte{' ', ','} {
			s := string(b)
			var w pieceWriter
			w.data = make([]byte, len(s)+8)
			w.offs = []int32{0}
			splitByte(&w, 0, []byte(s), sep)
			var got []string
			for k := 0; k+1 < len(w.offs); k++ {
				got = append(got, string(w.data[w.offs[k]:w.offs[k+1]]))
			}
			want := strings.Split(s, string(sep))
			if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Fatalf("split %q on %q: got %q, want %q", s, sep, got, want)
			}
		}
	}
}

// TestSplitMinLength checks the pieces kept with a minimum length in bytes and
// in characters against strings.Split and utf8.RuneCountInString, with the
// input row of each piece (keepRows), on random strings of one- and multi-byte
// characters.
func TestSplitMinLength(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "b", " ", "é", "€", "𝄞"}
	for n := 0; n < 3000; n++ {
		var rows []string
		for range 1 + r.IntN(4) {
			var b strings.Builder
			for range r.IntN(20) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			rows = append(rows, b.String())
		}
		minBytes, minChars := r.IntN(4), r.IntN(5)
		w := pieceWriter{minBytes: max(minBytes, minChars), minChars: minChars, keepRows: true}
		size := 0
		for _, s := range rows {
			size += len(s)
		}
		w.data = make([]byte, size+8)
		w.offs = []int32{0}
		var want []string
		for i, s := range rows {
			splitByte(&w, int32(i), []byte(s), ' ')
			for _, p := range strings.Split(s, " ") {
				if len(p) >= minBytes && utf8.RuneCountInString(p) >= minChars {
					want = append(want, fmt.Sprintf("%d:%s", i, p))
				}
			}
		}
		if minChars > 1 {
			w.dropFewerChars(minChars)
		}
		var got []string
		for k := 0; k+1 < len(w.offs); k++ {
			got = append(got, fmt.Sprintf("%d:%s", w.rep[k], w.data[w.offs[k]:w.offs[k+1]]))
		}
		if strings.Join(got, "|") != strings.Join(want, "|") || int(w.pos) != int(w.offs[len(w.offs)-1]) {
			t.Fatalf("rows %q, min %d bytes %d chars: got %q, want %q", rows, minBytes, minChars, got, want)
		}
	}
}

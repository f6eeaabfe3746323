package exec

import (
	"math/rand/v2"
	"strings"
	"testing"
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

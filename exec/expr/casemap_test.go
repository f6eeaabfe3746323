package expr

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestASCIICaseMap checks the eight-bytes-at-a-time case mapping against the
// standard library on every ASCII byte, in every position of the word.
func TestASCIICaseMap(t *testing.T) {
	var all []byte
	for b := 0; b < 128; b++ {
		all = append(all, byte(b))
	}
	r := rand.New(rand.NewPCG(1, 2))
	inputs := []string{"", "A", "Hello, World! ZAza@[`{", string(all)}
	for n := 0; n < 200; n++ {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = all[r.IntN(len(all))]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		for _, upper := range []bool{false, true} {
			dst := make([]byte, len(in))
			if !asciiCaseMap(dst, []byte(in), upper) {
				t.Fatalf("%q: reported non-ASCII", in)
			}
			want := strings.ToLower(in)
			if upper {
				want = strings.ToUpper(in)
			}
			if string(dst) != want {
				t.Errorf("upper=%v %q: got %q, want %q", upper, in, dst, want)
			}
		}
	}
	if asciiCaseMap(make([]byte, 10), []byte("abcdefgh\xc3\xa9"), false) {
		t.Error("a non-ASCII byte after the first word was not reported")
	}
	if asciiCaseMap(make([]byte, 9), []byte("abc\xc3\xa9defg"), true) {
		t.Error("a non-ASCII byte in the first word was not reported")
	}
}

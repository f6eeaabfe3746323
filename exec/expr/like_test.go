package expr

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestLikeSegmentsRandom: patterns of literals and % (and some with _) over a
// small alphabet match exactly the strings Go's regexp says they do (% as
// (?s).*, _ as one character, the whole string anchored).
func TestLikeSegmentsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(n int, alphabet string) string {
		var b strings.Builder
		for range r.IntN(n + 1) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	segments := 0
	for range 3000 {
		pat := word(7, "ab%%_")
		if r.IntN(3) > 0 {
			pat = strings.ReplaceAll(pat, "_", "a") // mostly the segment kind
		}
		var re strings.Builder
		re.WriteString("^(?s)")
		for _, c := range pat {
			switch c {
			case '%':
				re.WriteString(".*")
			case '_':
				re.WriteString(".")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("$")
		want := regexp.MustCompile(re.String())
		p, err := compileLike([]byte(pat), defaultEscape, false)
		if err != nil {
			t.Fatal(err)
		}
		if p.kind == likeSegments {
			segments++
		}
		for range 20 {
			s := word(9, "abc")
			if got := p.match([]byte(s)); got != want.MatchString(s) {
				t.Fatalf("%q LIKE %q: %v, want %v", s, pat, got, !got)
			}
		}
	}
	if segments < 500 {
		t.Fatalf("only %d patterns of literals between %%s", segments)
	}
}

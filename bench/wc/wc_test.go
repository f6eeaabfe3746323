package wc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/bench/counts"
)

func digest(t *Table) counts.Digest {
	var d counts.Digest
	t.Each(func(w []byte, n int64) { d.Add(string(w), n) })
	return d
}

func TestCountReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]int64
	}{
		{"empty", "", map[string]int64{}},
		{"no final newline", "The cat\nthe", map[string]int64{"the": 2, "cat": 1}},
		{"runs of spaces", "  a  A\n\n b \n", map[string]int64{"a": 2, "b": 1}},
		{"punctuation stays", "God, god god.\n", map[string]int64{"god,": 1, "god": 1, "god.": 1}},
		{"word longer than a block", strings.Repeat("x", 3*blockSize) + " y\n",
			map[string]int64{strings.Repeat("x", 3*blockSize): 1, "y": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CountReader(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := digest(got), counts.Of(tc.want); g != w {
				t.Errorf("got %v, want %v", g, w)
			}
		})
	}
}

// TestCountFileMatchesReference splits a multi-block file across workers, so words
// straddle both block and worker boundaries, and checks against the reference.
func TestCountFileMatchesReference(t *testing.T) {
	var b bytes.Buffer
	words := []string{"In", "the", "beginning", "God", "created", "HEAVEN", "and", "earth."}
	for i := 0; b.Len() < 3*blockSize+123; i++ {
		b.WriteString(words[i%len(words)])
		if i%7 == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteString(strings.Repeat(" ", 1+i%3))
		}
		b.WriteString(strings.Repeat("w", i%11)) // many distinct words: the table grows
	}
	path := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := counts.Reference(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2, 3, 8} {
		got, err := CountFile(path, workers)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := digest(got), counts.Of(ref); g != w {
			t.Errorf("%d workers: got %v, want %v", workers, g, w)
		}
	}
}

func TestWriteToParses(t *testing.T) {
	tb, err := CountReader(strings.NewReader("a b a\nc a b\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := tb.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	got, err := counts.ParseLines(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := counts.Of(map[string]int64{"a": 3, "b": 2, "c": 1}); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

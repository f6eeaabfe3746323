package wc

import (
	"os"
	"testing"
)

// BenchmarkCountFile profiles the counter on the file named by $WC_INPUT.
func BenchmarkCountFile(b *testing.B) {
	path := os.Getenv("WC_INPUT")
	if path == "" {
		b.Skip("set WC_INPUT to a text file")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		if _, err := CountFile(path, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// Command gowc is the benchmark's hand-written WordCount (package wc), the machine's
// practical limit: it counts the words of one file and prints "word count" lines.
//
//	gowc [-workers N] FILE
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/hummer-db/hummer/bench/wc"
)

func main() {
	workers := flag.Int("workers", runtime.NumCPU(), "goroutines, each counting its own byte range")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gowc [-workers N] FILE")
		os.Exit(2)
	}
	t, err := wc.CountFile(flag.Arg(0), *workers)
	if err == nil {
		_, err = t.WriteTo(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gowc:", err)
		os.Exit(1)
	}
}

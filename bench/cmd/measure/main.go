// Command measure runs a program and reports what it cost: wall time, user + system
// CPU time and peak RSS, as one JSON object written to the file named by -o. The
// program's standard streams are its own.
//
//	measure -o REPORT -- PROGRAM [ARGS...]
//
// Why a separate process: Linux carries a process's peak RSS across execve, and Go
// starts children with vfork semantics, so a child's ru_maxrss would include its
// parent's own peak. The benchmark driver holds the inputs in memory and would set a
// floor of a hundred MiB or more under every contender; this program's floor is a few
// MiB, and the README reports it (run `measure -o F -- true`).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Report is what measure writes.
type Report struct {
	WallNS    int64  `json:"wall_ns"`
	CPUNS     int64  `json:"cpu_ns"` // user + system
	MaxRSSKiB int64  `json:"max_rss_kib"`
	Error     string `json:"error,omitempty"` // why the program failed, if it did
}

func main() {
	out := flag.String("o", "", "file to write the JSON report to")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: measure -o REPORT -- PROGRAM [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	t0 := time.Now()
	err := cmd.Run()
	r := Report{WallNS: time.Since(t0).Nanoseconds()}
	if cmd.ProcessState != nil {
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		r.CPUNS = ru.Utime.Nano() + ru.Stime.Nano()
		r.MaxRSSKiB = ru.Maxrss // Linux reports kilobytes
	}
	if err != nil {
		r.Error = err.Error()
	}
	b, _ := json.Marshal(r)
	if werr := os.WriteFile(*out, b, 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, "measure:", werr)
		os.Exit(1)
	}
	if err != nil {
		os.Exit(1)
	}
}

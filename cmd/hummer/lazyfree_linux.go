package main

import (
	"os"
	"strings"
	"syscall"
)

// lazyFree re-executes the process with GODEBUG=madvdontneed=0 (once: the new
// process finds the setting and returns), so that the Go runtime hands the
// heap's free pages back with MADV_FREE instead of MADV_DONTNEED. The runtime
// reads the setting only as it starts, and //go:debug does not accept it.
//
// Why: a server runs a query, gives back the pages it grew (the watchdog's
// debug.FreeOSMemory, the background scavenger) and the next query takes them
// again. Under MADV_DONTNEED every page taken again is a page fault and a page
// zeroed; on a virtual machine that reports free pages to its host (as this
// project's machines do), the host has reclaimed them within seconds and each
// fault goes out to it. TPC-H q18 at SF1 with 4 s between runs took 120 k
// faults and 1.0–1.8 s of CPU a run, against 0.36–0.52 s with MADV_FREE (2 to
// 9 k faults: the pages stay the process's until the kernel needs memory, which
// takes them then without asking). The cost: RSS counts the pages a query
// freed until the kernel takes them.
//
// Not in the VM image's init (PID 1), whose process starts once per boot and
// whose kernel has no host to give pages to but qemu; not when GODEBUG already
// says madvdontneed.
func lazyFree() {
	godebug := os.Getenv("GODEBUG")
	if os.Getpid() == 1 || strings.Contains(godebug, "madvdontneed=") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if godebug != "" {
		godebug = "madvdontneed=0," + godebug
	} else {
		godebug = "madvdontneed=0"
	}
	if os.Setenv("GODEBUG", godebug) != nil {
		return
	}
	// Exec returns only when it failed; the process then runs on as it is.
	_ = syscall.Exec(exe, os.Args, os.Environ())
}

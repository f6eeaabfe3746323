package main

import (
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// batchSlice is the time slice a TaskManager's threads ask for; the kernel's
// default is a few milliseconds. A kernel that refuses the request (custom
// slices came with Linux 6.12) gets SCHED_BATCH alone.
const batchSlice = 12 * time.Millisecond

// batchScheduling puts every thread of the process under Linux's SCHED_BATCH
// policy, asking for time slices of batchSlice; threads started later inherit
// both from the thread that starts them.
//
// A TaskManager's threads run compute-bound tasks. Under the default policy
// every thread that wakes (the Go runtime's sysmon, timers, a network poller)
// may preempt whatever runs on the core, another TaskManager's task included,
// and the preempted task finds its hash table gone from the core's caches when
// it resumes. SCHED_BATCH keeps a woken thread from preempting: it waits for
// the running one's time slice to end, or for an idle core. A longer slice
// makes fewer such switches between TaskManagers sharing cores.
//
// Measured with the bench's distributed suite (3 TaskManagers of one slot on 2
// cores, throughput / local mode's; 8 runs a figure, medians of the figures):
// default policy 0.86 on 10 x kjv and 0.88 on 50 x (5 figures); SCHED_BATCH
// 0.91 and 0.93 (7); SCHED_BATCH with 12 ms slices 0.94 and 0.96 (5; 24 ms:
// no better). The price is latency on a host busier than its cores: a thread
// woken by a record may wait for the running one's slice to end, rather than
// take its core. Idle cores take a woken thread at once: a query of three rows
// on an idle cluster took 2.2-2.4 ms either way.
func batchScheduling() error {
	slice := uint64(batchSlice)
	// Listing the threads races with the runtime starting more: repeat until a
	// pass finds none left to change.
	for range 10 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		changed := false
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			attr, err := unix.SchedGetAttr(tid, 0)
			if errors.Is(err, unix.ESRCH) {
				continue // the thread exited
			}
			if err != nil {
				return err
			}
			if attr.Policy == unix.SCHED_BATCH {
				continue // set by this loop, or inherited with the slice
			}
			attr.Policy, attr.Runtime = unix.SCHED_BATCH, slice
			err = unix.SchedSetAttr(tid, attr, 0)
			if errors.Is(err, unix.EINVAL) && slice != 0 {
				slice, attr.Runtime = 0, 0
				err = unix.SchedSetAttr(tid, attr, 0)
			}
			if err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return errors.New("threads kept starting under another scheduling policy")
}

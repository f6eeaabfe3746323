package taskmanager

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/hummer-db/hummer/exec"
)

// The memory watchdog: with a soft memory limit set (--memory, or the
// cgroup's), a query whose state outgrows it would take the whole process down
// ("fatal error: out of memory"), and every session and continuous job with
// it. While the TaskManager runs deployments, the watchdog samples the live
// heap; past watchdogShare of the limit, after a collection, it cancels the
// newest deployment (the query that just grew) with exec.ErrOutOfMemory
// (SQLSTATE 53200), and waits watchdogPause before it looks again. Hash
// aggregation spills to disk within its budget (TaskContext.WorkMem); what
// cannot spill yet (a sort, a join's build side, one group's DISTINCT) fails
// its query this way instead of the server.
const (
	watchdogEvery = 100 * time.Millisecond
	watchdogShare = 0.9
	watchdogPause = time.Second
)

// The heap floor: with GOGC's default, the collector runs whenever the heap
// has doubled since the last collection, and a scan's live heap is a few MiB
// (batches come and go), so a CSV scan of lineitem collected 30 times a
// second, each collection stopping every task for its stack. While
// deployments run, the watchdog sets the GC percentage so that the heap may
// grow by heapFloor (a quarter of the memory limit, if less) over what was
// live at the last collection, or double, whichever is more: TPC-H q6 and q1
// over CSV took 10% less CPU (2900 to 2590 and 3370 to 3090 ms). A GOGC the
// user set is left alone; the memory limit still bounds the heap.
//
// When the last deployment ends, the watchdog puts the GC percentage back
// and hands the heap's free pages back to the system (debug.FreeOSMemory): a
// server between queries holds its live heap, not the garbage the floor let
// its last query leave (WordCount's peak RSS at 10 x kjv had grown from 75 to
// 135 MiB over twenty queries, the heap growing toward live + 64 MiB and
// never shrinking).
const (
	heapFloor    = 64 << 20
	maxGCPercent = 2000
)

// gcPercentFor returns the GC percentage for live bytes at the last
// collection under memory limit limit (math.MaxInt64: none).
func gcPercentFor(live uint64, limit int64) int {
	floor := uint64(min(int64(heapFloor), limit/4))
	if live == 0 || live >= floor {
		return 100
	}
	return int(min(floor*100/live, maxGCPercent))
}

// running are the deployments of a TaskManager, oldest first, and the
// watchdog that runs while there are any.
type running struct {
	mu       sync.Mutex
	list     []*watched
	watching bool
	// idle wakes the watchdog when the last deployment is removed, so it
	// releases memory at once instead of at its next tick.
	idle chan struct{}
}

type watched struct {
	d     *exec.Deployment
	jobID string
}

// add registers d, starting the watchdog if it is not running.
func (r *running) add(d *exec.Deployment, jobID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, &watched{d: d, jobID: jobID})
	if r.idle == nil {
		r.idle = make(chan struct{}, 1)
	}
	if !r.watching {
		r.watching = true
		go r.watch()
	}
}

// remove forgets d once it has stopped.
func (r *running) remove(d *exec.Deployment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.list {
		if w.d == d {
			r.list = append(r.list[:i], r.list[i+1:]...)
			if len(r.list) == 0 {
				select {
				case r.idle <- struct{}{}:
				default: // the watchdog is woken already
				}
			}
			return
		}
	}
}

// newest returns the newest deployment, or nil when none runs (and then the
// watchdog stops: watching is cleared under the lock add takes).
func (r *running) newest() *watched {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) == 0 {
		r.watching = false
		return nil
	}
	return r.list[len(r.list)-1]
}

func (r *running) watch() {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	live := func() uint64 {
		metrics.Read(sample[:1])
		return sample[0].Value.Uint64()
	}
	tuneGC := os.Getenv("GOGC") == ""
	percent := 100
	tick := time.NewTicker(watchdogEvery)
	defer tick.Stop()
	// The first look is at once, not a tick later: a query of less than a
	// tick (most of TPC-H's at SF1) otherwise ran all its length at GOGC's
	// default over the small live heap of a server between queries.
	for first := true; ; first = false {
		if !first {
			select {
			case <-tick.C:
			case <-r.idle:
			}
		}
		w := r.newest()
		if w == nil {
			if tuneGC && percent != 100 {
				debug.SetGCPercent(100)
			}
			debug.FreeOSMemory()
			return
		}
		limit := debug.SetMemoryLimit(-1)
		if tuneGC {
			metrics.Read(sample[1:])
			// Only a change of a quarter or more: the live heap moves a
			// little at every collection.
			if p := gcPercentFor(sample[1].Value.Uint64(), limit); p*4 < percent*3 || p*3 > percent*4 {
				debug.SetGCPercent(p)
				percent = p
			}
		}
		if limit == math.MaxInt64 {
			continue
		}
		bound := uint64(float64(limit) * watchdogShare)
		if live() < bound {
			continue
		}
		// What is garbage does not count. Two collections: buffers in the
		// vector package's sync.Pools survive the first in the pools' victim
		// caches, still live, and only the second frees them (a GROUP BY
		// that spills within its budget once failed at 108 MiB of 120).
		runtime.GC()
		runtime.GC()
		if n := live(); n >= bound {
			w.d.Cancel(fmt.Errorf("%w: job %s used the server's memory up (%d MiB of heap, the limit is %d MiB: --memory); a query's single-group DISTINCTs, and a join over a stream, do not spill to disk; a continuous GROUP BY keeps its groups on disk with SET state_backend = 'disk'",
				exec.ErrOutOfMemory, w.jobID, n>>20, limit>>20))
			time.Sleep(watchdogPause)
		}
	}
}

// stateLimit is the state an operator of a TaskManager of slots slots may keep
// on the memory backend (TaskContext.StateLimit): a slot's share of the part
// of the soft memory limit the watchdog allows, so that a streaming
// aggregation fails with an error naming state_backend = 'disk' before the
// watchdog has to stop its job; 0 without a limit.
func stateLimit(slots int) int64 {
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		return 0
	}
	return int64(float64(limit) * watchdogShare / float64(max(slots, 1)))
}

// DefaultWorkMem is the memory an operator of a TaskManager of slots slots may
// hold before it spills: an eighth of the process's soft memory limit a slot
// (a task may have two big operators, and batches, buffers and the Go heap's
// slack need the rest), or of the machine's memory when no limit is set; at
// least 4 MiB, PostgreSQL's default work_mem. (A floor of 16 MiB was more than
// the eighth under --memory 120MiB: a hash table of 16 MiB can double once
// more before it spills, and two of them with their partial aggregates and the
// server's own heap came to 108 MiB, past the watchdog's bound.)
func DefaultWorkMem(slots int) int64 {
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		limit = physicalMemory()
	}
	return max(limit/int64(8*max(slots, 1)), 4<<20)
}

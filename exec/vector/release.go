package vector

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// The memory a query grew (its key tables and batches, kept in the pools of
// this package for the next query, and the heap they came from) stays with the
// process once the query ends: a GROUP BY over ten million keys left 1.9 GB
// held while idle, and each such query grew it further. JobEnded has it given
// back to the operating system once no job has started or ended for
// releaseDelay (JobStarted calls it off: the new job may reuse the pools), if
// the process holds more than releaseThreshold of heap: queries that follow
// each other keep their pools warm, and a big query, once the process is
// quiet, leaves nothing behind but what running jobs use.
const (
	releaseThreshold = 256 << 20
	releaseDelay     = time.Second
)

var idle struct {
	mu    sync.Mutex
	timer *time.Timer
}

// JobStarted tells that a job's tasks start here: a pending release waits
// for the next JobEnded.
func JobStarted() {
	idle.mu.Lock()
	defer idle.mu.Unlock()
	if idle.timer != nil {
		idle.timer.Stop()
	}
}

// JobEnded tells that a job's tasks stopped here: in releaseDelay, unless
// another starts or ends meanwhile, the heap beyond what live data needs goes
// back to the operating system (ReleaseMemory).
func JobEnded() {
	idle.mu.Lock()
	defer idle.mu.Unlock()
	if idle.timer == nil {
		idle.timer = time.AfterFunc(releaseDelay, func() { ReleaseMemory(releaseThreshold) })
		return
	}
	idle.timer.Reset(releaseDelay)
}

// ReleaseMemory gives the heap the process holds but does not use back to the
// operating system, if it holds more than threshold bytes of heap. Two
// collections: the first moves the pools' slices and buffers to their victim
// caches, the second (FreeOSMemory's) drops them and returns the pages. It
// reports whether it released.
func ReleaseMemory(threshold uint64) bool {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapSys-ms.HeapReleased < threshold {
		return false
	}
	runtime.GC()
	debug.FreeOSMemory()
	return true
}

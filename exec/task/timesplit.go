package task

import (
	"time"

	"github.com/hummer-db/hummer/exec"
)

// timeSplit divides a task's wall time into the stretches its metrics count
// (exec.TaskMetrics.BusyNanos, IdleNanos): a busy stretch from one message to
// the next, an idle one from the moment its inbox is found empty to the next
// message. Time blocked on a full queue downstream falls in busy stretches and
// is counted apart (BackpressureNanos, by the channels), and so is the time a
// source says it waited for input (IdleNanos, a throttled generator or a
// broker with nothing new): both are taken out of busy. A task calls it once
// or twice per message, never per row. A nil timeSplit, a task's with
// exec.TaskContext.NoTaskMetrics, counts nothing.
type timeSplit struct {
	m    *exec.TaskMetrics
	mark time.Time
	idle bool  // the stretch since mark is idle
	bp   int64 // BackpressureNanos at mark
	wait int64 // IdleNanos at mark
}

func newTimeSplit(tc *exec.TaskContext) *timeSplit {
	if tc.NoTaskMetrics {
		return nil
	}
	m := tc.Metrics
	return &timeSplit{m: m, mark: time.Now(), bp: m.BackpressureNanos.Load(), wait: m.IdleNanos.Load()}
}

// next ends the stretch since the last call, counting it, and starts an idle
// one (the task waits on an empty inbox) or a busy one.
func (s *timeSplit) next(idle bool) {
	if s == nil {
		return
	}
	now := time.Now()
	d := now.Sub(s.mark).Nanoseconds()
	bp := s.m.BackpressureNanos.Load()
	if s.idle {
		s.m.IdleNanos.Add(d)
	} else if d -= bp - s.bp + s.m.IdleNanos.Load() - s.wait; d > 0 {
		s.m.BusyNanos.Add(d)
	}
	s.mark, s.idle, s.bp, s.wait = now, idle, bp, s.m.IdleNanos.Load()
}

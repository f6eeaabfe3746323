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

// opClock divides a task's time among the operators of its fused chain
// (exec.TaskMetrics.ChainNanos). The operators call each other, so an
// operator's own time is the time in its calls less that in the calls it makes
// to the next: every call through the chain enters the callee's position and
// leaves it for the caller's, and each of those moments reads the clock once
// and charges the stretch since the last one to the position that ran it. A
// task calls it per batch and per operator, never per row. Position -1 is the
// task's own work (its inbox, its output and the time its output blocked on
// full queues), no operator's. A nil opClock, a task's with
// exec.TaskContext.NoTaskMetrics, measures nothing.
type opClock struct {
	m    *exec.TaskMetrics
	cur  int // the position running since mark
	mark time.Time
	// wait is the source's IdleNanos (what it said it waited for input) at
	// the last charge to position 0 of a source task, which takes it out.
	source bool
	wait   int64
}

// newOpClock returns the clock of a task, running position cur from now: 0
// for a source task (its source), -1 for a task fed by its inbox.
func newOpClock(tc *exec.TaskContext, cur int) *opClock {
	if tc.NoTaskMetrics || tc.Metrics.OperatorNanos(0) == nil {
		return nil
	}
	return &opClock{m: tc.Metrics, cur: cur, mark: time.Now(), source: cur == 0, wait: tc.Metrics.IdleNanos.Load()}
}

// enter charges the time since the last call and starts position pos; it
// returns the position to go back to (leave).
func (c *opClock) enter(pos int) (prev int) {
	if c == nil {
		return 0
	}
	c.charge()
	prev, c.cur = c.cur, pos
	return prev
}

// leave charges the time since the last call to the position that ran it and
// goes back to position prev.
func (c *opClock) leave(prev int) {
	if c == nil {
		return
	}
	c.charge()
	c.cur = prev
}

func (c *opClock) charge() {
	now := time.Now()
	d := now.Sub(c.mark).Nanoseconds()
	c.mark = now
	if c.cur < 0 {
		return
	}
	if c.source && c.cur == 0 {
		w := c.m.IdleNanos.Load()
		d -= w - c.wait
		c.wait = w
	}
	if d > 0 {
		c.m.OperatorNanos(c.cur).Add(d)
	}
}

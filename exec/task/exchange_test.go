package task

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec"
)

// TestPushBackpressure: the time a push into a full inbox blocks is the
// sender's backpressure; a push with room counts none.
func TestPushBackpressure(t *testing.T) {
	inbox := make(chan exec.Message, 1)
	var m exec.TaskMetrics
	c := LocalChannel{Inbox: inbox, Sender: &m}
	ctx := context.Background()
	if err := c.Push(ctx, exec.Batch{}, exec.Signal{Kind: exec.Watermark, Watermark: 1}); err != nil {
		t.Fatal(err)
	}
	if n := m.BackpressureNanos.Load(); n != 0 {
		t.Errorf("a push with room counted %d ns of backpressure, want 0", n)
	}
	// The inbox stays full: the second push blocks until its context ends.
	cctx, cancel := context.WithCancel(ctx)
	pushed := make(chan error)
	go func() { pushed <- c.Push(cctx, exec.Batch{}, exec.Signal{Kind: exec.Watermark, Watermark: 2}) }()
	cancel()
	if err := <-pushed; err == nil {
		t.Fatal("a push into a full inbox succeeded")
	}
	if n := m.BackpressureNanos.Load(); n <= 0 {
		t.Errorf("a push that waited for room counted %d ns of backpressure, want more than 0", n)
	}
	if got := (<-inbox).Signal.Watermark; got != 1 {
		t.Errorf("the inbox holds watermark %d, want 1", got)
	}
}

// TestTimeSplit: stretches are counted as busy or idle as next says, and the
// backpressure met during a busy stretch is not busy.
func TestTimeSplit(t *testing.T) {
	var m exec.TaskMetrics
	s := newTimeSplit(&exec.TaskContext{Metrics: &m})
	s.next(true) // busy until now, idle from now
	s.next(false)
	idle := m.IdleNanos.Load()
	busy := m.BusyNanos.Load()
	// A busy stretch wholly backpressured counts no busy time.
	m.BackpressureNanos.Add(1 << 40)
	s.next(false)
	if m.BusyNanos.Load() != busy {
		t.Errorf("a backpressured stretch added %d ns of busy time", m.BusyNanos.Load()-busy)
	}
	if m.IdleNanos.Load() != idle {
		t.Errorf("a busy stretch added idle time")
	}
	if idle < 0 || busy < 0 {
		t.Errorf("negative times: busy %d, idle %d", busy, idle)
	}
}

// BenchmarkTimeSplit is what a task pays per message for its busy/idle split:
// the metrics' cost on the hot path, once per batch (bench/README.md's
// metrics overhead divides it by a batch's cost).
func BenchmarkTimeSplit(b *testing.B) {
	var m exec.TaskMetrics
	s := newTimeSplit(&exec.TaskContext{Metrics: &m})
	for i := 0; i < b.N; i++ {
		s.next(i%8 == 0)
	}
}

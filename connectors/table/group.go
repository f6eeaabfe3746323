package table

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Group commit. A small INSERT (its rows not yet written: fewer than
// BatchRows) does not write a version of its own: once its rows passed the
// table's checks under the writer lock, they join the table's open group and
// the lock goes to the next writer, whose checks see them (their keys join
// the table's at once). The first Tx to join a group while none is being
// written writes it, and the groups that open meanwhile, as one log record
// each (wal.go), fsynced once for all their statements; each statement
// returns when its group is durable, with the group's error if it failed. So
// sixteen sessions inserting one row each share the fsyncs, as PostgreSQL's
// commits share its WAL flushes. A Tx that replaces the table (UPDATE,
// DELETE) first waits until the groups are written, so that it reads and
// replaces their rows too.

// groups is a table's group commit state.
type groups struct {
	mu      sync.Mutex
	open    *group // rows waiting for the next write
	writing bool   // a Tx is writing groups
	idle    *sync.Cond
}

type group struct {
	c       Constraints
	recs    []arrow.RecordBatch
	rows    int
	waiters []chan error
}

// groupable says the Tx may commit in a group: it appends, and all its rows
// are still in memory.
func (tx *Tx) groupable() bool {
	return !tx.replace && !tx.change && tx.sinkName == "" && tx.w == nil && len(tx.written) == 0 && tx.pendingRows > 0 && tx.pendingRows < BatchRows
}

// commitGrouped adds the Tx's rows to the table's open group, lets the
// writer lock go, and waits until the group is durable (writing it, and the
// groups after it, if no one else is).
func (tx *Tx) commitGrouped() error {
	t := tx.t
	done := make(chan error, 1)
	g := &t.groups
	g.mu.Lock()
	if g.open == nil {
		g.open = &group{c: tx.c}
	}
	g.open.recs = append(g.open.recs, tx.pending...)
	g.open.rows += tx.pendingRows
	g.open.waiters = append(g.open.waiters, done)
	lead := !g.writing
	g.writing = g.writing || lead
	g.mu.Unlock()
	if tx.keys != nil {
		t.mu.Lock()
		if t.keys != nil {
			for k := range tx.keys {
				t.keys[k] = struct{}{}
			}
		}
		t.mu.Unlock()
	}
	tx.pending, tx.pendingRows, tx.done = nil, 0, true
	t.writer.Unlock()
	if lead {
		t.writeGroup(tx.s)
		// Groups that opened meanwhile are written on, without this
		// statement waiting for them.
		tx.s.background.Add(1)
		go func() {
			defer tx.s.background.Done()
			t.writeGroups(tx.s)
		}()
	}
	return <-done
}

// writeGroups writes the open groups until there is none, then lets the
// next Tx lead.
func (t *tableState) writeGroups(s *Store) {
	for t.writeGroup(s) {
	}
	if t.shouldFold(s) {
		t.fold(s) // a fold that fails is tried again after the next group
	}
}

// writeGroup writes the open group, if any, and tells its statements; it
// returns false, ending the writing, when there was none.
func (t *tableState) writeGroup(s *Store) bool {
	g := &t.groups
	g.mu.Lock()
	gr := g.open
	g.open = nil
	if gr == nil {
		g.writing = false
		if g.idle != nil {
			g.idle.Broadcast()
		}
		g.mu.Unlock()
		return false
	}
	g.mu.Unlock()
	rec, err := concat(gr.c.Schema.Arrow(), gr.recs, memory.DefaultAllocator)
	for _, r := range gr.recs {
		r.Release()
	}
	if err == nil {
		t.commitMu.Lock()
		err = t.appendLog(s, rec) // wal.go
		t.commitMu.Unlock()
		rec.Release()
	}
	if err != nil {
		t.mu.Lock()
		t.keys = nil // the group's keys joined them: read them again from the table
		t.mu.Unlock()
	}
	for _, done := range gr.waiters {
		done <- err
	}
	return true
}

// waitGroups returns once no group is open or being written. The caller holds
// the writer lock, so none opens meanwhile.
func (t *tableState) waitGroups() {
	g := &t.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idle == nil {
		g.idle = sync.NewCond(&g.mu)
	}
	for g.writing || g.open != nil {
		g.idle.Wait()
	}
}

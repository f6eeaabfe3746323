package table

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A table's changes, for the scans that follow them (a view over the table):
// while a table has followers (Store.Follow), each commit of version N writes
// c-N.json, which names the rows it deleted and those it inserted as hard
// links to segment files (c-N-d0.arrow, c-N-i0.arrow, ...): no row is copied,
// and the links keep the rows readable after the versions that held them are
// gone. Rows that were only in memory or in the log (a logged INSERT's, an
// UPDATE's deleted rows) are written to such files first. An UPDATE or
// DELETE records the rows it removed and those it added. Changes are kept for changeRetention, then
// pruned; a follower that falls further behind fails. They are kept across a
// restart of the engine (written, not fsynced: a kill -9 of the server keeps
// them, a crash of the machine may not), and a table loaded with changes
// records those of its commits until its first follower goes, so that a
// follower resuming from its checkpoint (a view's job) finds every change
// after its position. A change missing is a gap the follower fails on.

// changeRetention is how long a commit's changes are kept for followers.
const changeRetention = 10 * time.Minute

// changeSet is the contents of c-N.json.
type changeSet struct {
	Version int64    `json:"version"`
	Deleted []string `json:"deleted,omitempty"`
	Added   []string `json:"added,omitempty"`
}

type changeFile struct {
	version int64
	at      time.Time
	files   []string
}

func changeFileName(n int64) string { return fmt.Sprintf("c-%08d.json", n) }

// Follow registers a follower of table id's changes; release, when it stops.
// It must come before the follower pins the version it starts from, so that
// every later commit records its changes.
func (s *Store) Follow(id string) (release func(), err error) {
	t, err := s.table(id)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.followers++
	t.mu.Unlock()
	done := false
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !done {
			done = true
			t.followers--
			t.recording = false
		}
	}, nil
}

// followed says commits record their changes. Lock should be held.
func (t *tableState) followed() bool { return t.followers > 0 || t.recording }

// keepChanges returns the change files among a loading table's files ents
// that a resuming follower may need (those of versions up to last, the
// table's version), and notes them for pruning, their retention counted from
// now: an engine down for longer does not make its followers fail. If there
// are any, the table goes on recording (tableState.recording).
func (t *tableState) keepChanges(ents []os.DirEntry, last int64) map[string]bool {
	kept := map[string]bool{}
	byVersion := map[int64]*changeFile{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "c-") || strings.HasSuffix(name, ".tmp") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(name, "c-")[:8], 10, 64)
		if len(name) < 10 || err != nil || n > last {
			continue
		}
		cf := byVersion[n]
		if cf == nil {
			cf = &changeFile{version: n, at: time.Now()}
			byVersion[n] = cf
		}
		cf.files = append(cf.files, name)
		kept[name] = true
	}
	for _, cf := range byVersion {
		t.changes = append(t.changes, *cf)
	}
	slices.SortFunc(t.changes, func(a, b changeFile) int { return cmpInt(a.version, b.version) })
	t.recording = len(t.changes) > 0
	return kept
}

// recordChanges writes version n's changes and prunes those past retention.
func (t *tableState) recordChanges(n int64, deleted, added []segment) {
	cs := changeSet{Version: n}
	var files []string
	link := func(seg segment, kind string, k int) (string, error) {
		name := fmt.Sprintf("c-%08d-%s%d.arrow", n, kind, k)
		err := os.Link(filepath.Join(t.dir, seg.File), filepath.Join(t.dir, name))
		files = append(files, name)
		return name, err
	}
	var err error
	for k, seg := range deleted {
		var name string
		if name, err = link(seg, "d", k); err != nil {
			break
		}
		cs.Deleted = append(cs.Deleted, name)
	}
	for k, seg := range added {
		if err != nil {
			break
		}
		var name string
		if name, err = link(seg, "i", k); err == nil {
			cs.Added = append(cs.Added, name)
		}
	}
	if err == nil {
		var data []byte
		if data, err = json.Marshal(cs); err == nil {
			// Written whole under a temporary name: a follower sees all of it
			// or nothing.
			tmp := filepath.Join(t.dir, changeFileName(n)+".tmp")
			if err = os.WriteFile(tmp, data, 0o644); err == nil {
				err = os.Rename(tmp, filepath.Join(t.dir, changeFileName(n)))
			}
		}
	}
	if err != nil {
		removeFiles(t.dir, files)
		return
	}
	now := time.Now()
	t.mu.Lock()
	t.changes = append(t.changes, changeFile{version: n, at: now, files: append(files, changeFileName(n))})
	var old []string
	for len(t.changes) > 0 && now.Sub(t.changes[0].at) > changeRetention {
		old = append(old, t.changes[0].files...)
		t.changes = t.changes[1:]
	}
	t.mu.Unlock()
	removeFiles(t.dir, old)
}

// readChanges reads c-N.json in dir; ok is false while it does not exist.
func readChanges(dir string, n int64) (cs changeSet, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, changeFileName(n)))
	if os.IsNotExist(err) {
		return changeSet{}, false, nil
	}
	if err != nil {
		return changeSet{}, false, err
	}
	if err := json.Unmarshal(data, &cs); err != nil {
		return changeSet{}, false, fmt.Errorf("%s: %w", changeFileName(n), err)
	}
	return cs, true, nil
}

// latestVersion returns the newest version in dir that has a version file or
// a change set.
func latestVersion(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var last int64
	for _, e := range ents {
		if n, ok := fileNumber(e.Name(), "v-", ".json"); ok {
			last = max(last, n)
		}
		if n, ok := fileNumber(e.Name(), "c-", ".json"); ok {
			last = max(last, n)
		}
	}
	return last, nil
}

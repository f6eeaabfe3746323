package file

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hummer-db/hummer/exec"
)

// The sink: INSERT INTO a directory table (a CONNECTION path ending in "/")
// writes part files into the directory, exactly once.
//
// Layout. Subtask s writes files named part-<s>-<seq>-<token>.<csv|json|txt>,
// seq counting the subtask's files from 0 and token being 8 hex digits: random
// when the job first starts, so that two jobs writing one table never pick the
// same names, and for a job restored from a checkpoint, derived from the
// checkpoint's token and number (restoredToken), so that the restored attempt
// never reuses a name of the failed one. With partition_by the
// files go into directories col=value/... (encode.go: appendPartition), one
// file per partition the subtask has rows for. The files hold every column,
// partition columns too, so that the source reads them back as the table.
//
// Protocol (after Flink's StreamingFileSink). Rows go to hidden in-progress
// files, named "." + the file's name + ".inprogress", which readers skip. At a
// checkpoint's barrier (SnapshotState) the open files are flushed, synced
// and closed, and recorded as pending for that checkpoint in the sink's
// state; when the checkpoint completes (NotifyCheckpointComplete) they are
// renamed to their names, which is atomic, so a reader sees a file whole or
// not at all. A job restored from a checkpoint (RestoreState) renames the
// files pending in it, whose checkpoint did complete even if the
// notification never came (a file already renamed is fine), and deletes
// every other hidden file of the subtask's token: rows written after the
// checkpoint, which the restored sources send again, and those of earlier
// attempts restored from the same checkpoint. A job without
// checkpoints (a plain bounded INSERT) renames its files at the end of its
// input; one that fails deletes them. Each file therefore holds each of its
// rows once, and no row is in two files.
//
// Limits: the end of a checkpointed job's input commits what is open at once
// (as the Kafka sink does), since no checkpoint completes after it; a job
// restored from an older checkpoint than the last one that completed would
// then write those rows again. A restored job must have the parallelism it
// had (the state is per subtask). The in-progress files of a first attempt
// that failed before its first checkpoint are left behind, hidden: the
// restarted subtasks have no state naming their random token.
type sink struct {
	cfg           config
	subtask       int
	token         string
	seq           int64 // the next file's sequence number
	checkpointing bool
	// open are the files being written, by partition directory ("" without
	// partition_by); last caches the one the previous row went to.
	open     map[string]*partFile
	last     *partFile
	lastKey  []byte
	pending  []pendingFiles // closed files, in checkpoint order
	buf, key []byte
	// broken is why files could not be closed whole: their rows are lost, so
	// the task must fail, for the job to restart from its last checkpoint
	// (a failed snapshot fails only the checkpoint, and the task would go on).
	broken error
}

// partFile is one file being written.
type partFile struct {
	rel string // its committed path in the table's directory, slash-separated
	f   *os.File
	w   *bufio.Writer
}

// pendingFiles are the files closed at a checkpoint's barrier, which the
// checkpoint's completion commits: their committed paths in the table's
// directory.
type pendingFiles struct {
	Checkpoint int64    `json:"checkpoint"`
	Files      []string `json:"files"`
}

// sinkStateVersion is the version of sinkState's encoding.
const sinkStateVersion = 1

// sinkState is the sink's checkpointed state, as JSON.
type sinkState struct {
	Version    int    `json:"version"`
	Subtask    int    `json:"subtask"`
	Checkpoint int64  `json:"checkpoint"`
	Token      string `json:"token"`
	Seq        int64  `json:"seq"`
	// Pending are the files awaiting the completion of the checkpoint or of
	// earlier ones.
	Pending []pendingFiles `json:"pending,omitempty"`
}

var (
	_ exec.Operator           = (*sink)(nil)
	_ exec.Checkpointed       = (*sink)(nil)
	_ exec.CheckpointListener = (*sink)(nil)
)

// errRetraction is the error for a delete or update the append-only sink gets.
var errRetraction = errors.New("file: a file table is append-only, and the query feeding it retracts rows (an aggregation's updates, say)")

func newSink(cfg config) (*sink, error) {
	if !cfg.dir {
		return nil, &fileError{code: "42809", err: errors.New("not a directory table"), // wrong_object_type
			msg: fmt.Sprintf("file table %s names one file, which is read, not written: a file table written to names a directory of part files (end its CONNECTION path with /, as in file://%s/)", cfg.path, cfg.path)}
	}
	return &sink{cfg: cfg}, nil
}

// Open creates the table's directory if it is not there.
func (k *sink) Open(ctx context.Context, tc *exec.TaskContext) error {
	k.subtask = tc.Subtask
	k.checkpointing = tc.Checkpointing
	var b [4]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	k.token = hex.EncodeToString(b[:])
	k.open = map[string]*partFile{}
	if st, err := os.Stat(k.cfg.path); err == nil && !st.IsDir() {
		return fmt.Errorf("%w: file table %s: not a directory", exec.ErrBadInput, k.cfg.path)
	}
	if err := os.MkdirAll(k.cfg.path, 0o755); err != nil {
		return fmt.Errorf("%w: file table %s: %w", exec.ErrBadInput, k.cfg.path, err)
	}
	return nil
}

func (k *sink) ext() string {
	if k.cfg.format == FormatText {
		return "txt"
	}
	return k.cfg.format
}

// hidden returns the path of the in-progress file of the committed path rel.
func (k *sink) hidden(rel string) string {
	dir, name := path.Split(rel)
	return filepath.Join(k.cfg.path, filepath.FromSlash(dir), "."+name+".inprogress")
}

// ProcessBatch appends b's rows to the open file of each row's partition,
// opening one where there is none.
func (k *sink) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if k.broken != nil {
		return k.broken
	}
	n := b.NumRows()
	if got, want := int(b.Rec.NumCols()), len(k.cfg.schema); n > 0 && got != want {
		return fmt.Errorf("file: the sink got rows of %d columns, table %s has %d", got, k.cfg.path, want)
	}
	var err error
	for i := range n {
		if op := b.Op(i); op == exec.Delete || op == exec.UpdateBefore {
			return errRetraction
		}
		pf := k.last
		if len(k.cfg.partition) > 0 {
			k.key = k.cfg.appendPartition(k.key[:0], b.Rec, i)
			if pf == nil || string(k.key) != string(k.lastKey) {
				pf = k.open[string(k.key)]
				k.lastKey = append(k.lastKey[:0], k.key...)
			}
		}
		if pf == nil {
			if pf, err = k.openFile(string(k.key)); err != nil {
				return err
			}
		}
		k.last = pf
		if k.buf, err = k.cfg.appendRow(k.buf[:0], b.Rec, i); err != nil {
			return err
		}
		if _, err := pf.w.Write(k.buf); err != nil {
			return fmt.Errorf("file: writing %s: %w", k.hidden(pf.rel), err)
		}
	}
	return nil
}

// openFile opens the next in-progress file, in partition directory dir ("",
// or ending with "/").
func (k *sink) openFile(dir string) (*partFile, error) {
	pf := &partFile{rel: fmt.Sprintf("%spart-%d-%d-%s.%s", dir, k.subtask, k.seq, k.token, k.ext())}
	k.seq++
	name := k.hidden(pf.rel)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	pf.f, pf.w = f, bufio.NewWriterSize(f, 64<<10)
	if k.cfg.format == FormatCSV && k.cfg.header {
		k.buf = k.cfg.appendHeader(k.buf[:0])
		pf.w.Write(k.buf) // a failure shows again at Flush
	}
	k.open[dir] = pf
	return pf, nil
}

// closeAll flushes, syncs and closes the open files and returns their
// committed paths, sorted. A file that fails to close whole breaks the sink.
func (k *sink) closeAll() ([]string, error) {
	var rels []string
	var errs []error
	for _, pf := range k.open {
		err := pf.w.Flush()
		if err == nil {
			err = pf.f.Sync()
		}
		if cerr := pf.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("file: closing %s: %w", k.hidden(pf.rel), err))
		}
		rels = append(rels, pf.rel)
	}
	clear(k.open)
	k.last = nil
	slices.Sort(rels)
	if len(errs) > 0 {
		k.broken = errors.Join(errs...)
		return nil, k.broken
	}
	return rels, nil
}

// commit renames the pending file of rel into place; a file already renamed
// (by an earlier incarnation of the subtask) is fine.
func (k *sink) commit(rel string) error {
	final := filepath.Join(k.cfg.path, filepath.FromSlash(rel))
	err := os.Rename(k.hidden(rel), final)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(final); serr == nil {
			return nil
		}
		return fmt.Errorf("file: committing %s: its in-progress file %s is gone (removed by hand?), and its rows with it", final, k.hidden(rel))
	}
	if err != nil {
		return fmt.Errorf("file: committing %s: %w", final, err)
	}
	return nil
}

// ProcessSignal commits, at the end of the input, every file written: no
// checkpoint completes after it. It forwards every signal.
func (k *sink) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if k.broken != nil {
		return k.broken
	}
	if s.Kind == exec.EndOfStream {
		rels, err := k.closeAll()
		if err != nil {
			return err
		}
		for _, p := range k.pending {
			if err := k.commitAll(p.Files); err != nil {
				return err
			}
		}
		k.pending = nil
		if err := k.commitAll(rels); err != nil {
			return err
		}
	}
	if out == nil {
		return nil
	}
	return out.CollectSignal(ctx, s)
}

// commitAll commits the files rels and then syncs their directories, so
// that the renames outlast a crash of the machine: the checkpoints after
// this one no longer name the files.
func (k *sink) commitAll(rels []string) error {
	dirs := map[string]bool{}
	for _, rel := range rels {
		if err := k.commit(rel); err != nil {
			return err
		}
		dirs[path.Dir(rel)] = true
	}
	for dir := range dirs {
		d, err := os.Open(filepath.Join(k.cfg.path, filepath.FromSlash(dir)))
		if err == nil {
			err = d.Sync()
			d.Close()
		}
		if err != nil {
			return fmt.Errorf("file: syncing directory %s: %w", dir, err)
		}
	}
	return nil
}

// SnapshotState closes the open files, pending now for checkpoint, and
// returns the files pending for it and for earlier checkpoints not yet
// complete, with the subtask's token and next sequence number.
func (k *sink) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	rels, err := k.closeAll()
	if err != nil {
		return nil, err
	}
	if len(rels) > 0 {
		k.pending = append(k.pending, pendingFiles{Checkpoint: checkpoint, Files: rels})
	}
	return json.Marshal(sinkState{Version: sinkStateVersion, Subtask: k.subtask, Checkpoint: checkpoint, Token: k.token, Seq: k.seq, Pending: k.pending})
}

// NotifyCheckpointComplete commits the files pending for checkpoint and for
// the ones before it.
func (k *sink) NotifyCheckpointComplete(ctx context.Context, checkpoint int64) error {
	for len(k.pending) > 0 && k.pending[0].Checkpoint <= checkpoint {
		if err := k.commitAll(k.pending[0].Files); err != nil {
			return err
		}
		k.pending = k.pending[1:]
	}
	return nil
}

// RestoreState commits the files pending in data, as its checkpoint
// completed, then deletes every other in-progress file of the checkpoint's
// token and of the token attempts restored from it write with, which this
// one then writes with too. It is called after Open, before any input.
func (k *sink) RestoreState(ctx context.Context, data []byte) error {
	var st sinkState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("file: restoring the sink of %s: %w", k.cfg.path, err)
	}
	switch {
	case st.Version != sinkStateVersion:
		return fmt.Errorf("file: restoring the sink of %s: state version %d, this release reads version %d", k.cfg.path, st.Version, sinkStateVersion)
	case st.Subtask != k.subtask:
		return fmt.Errorf("file: restoring subtask %d of the sink of %s from the state of subtask %d (the job's parallelism changed?)", k.subtask, k.cfg.path, st.Subtask)
	case st.Token == "" || strings.ContainsAny(st.Token, "/-."):
		return fmt.Errorf("file: restoring the sink of %s: bad token %q", k.cfg.path, st.Token)
	case len(k.open) > 0:
		return fmt.Errorf("file: restoring the sink of %s after it started", k.cfg.path)
	}
	k.pending = nil
	for _, p := range st.Pending {
		if err := k.commitAll(p.Files); err != nil {
			return err
		}
	}
	k.token, k.seq = restoredToken(st.Token, st.Checkpoint), st.Seq
	return k.removeInProgress(st.Token, k.token)
}

// restoredToken is the token of the attempts restored from checkpoint,
// whose token was token.
func restoredToken(token string, checkpoint int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s:%d", token, checkpoint))
	return hex.EncodeToString(sum[:4])
}

// removeInProgress deletes the subtask's in-progress files of the tokens
// anywhere under the table's directory.
func (k *sink) removeInProgress(tokens ...string) error {
	prefix := fmt.Sprintf(".part-%d-", k.subtask)
	return filepath.WalkDir(k.cfg.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return fmt.Errorf("file: cleaning up %s: %w", k.cfg.path, err)
		}
		name := d.Name()
		if d.IsDir() || !strings.HasPrefix(name, prefix) || !slices.ContainsFunc(tokens, func(token string) bool {
			return strings.HasSuffix(name, "-"+token+"."+k.ext()+".inprogress")
		}) {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("file: removing %s: %w", p, err)
		}
		return nil
	})
}

// Close closes and deletes the files being written, which no checkpoint
// covers (a failed or cancelled job's); it leaves the pending ones to a
// restored job. It is safe to call twice.
func (k *sink) Close(ctx context.Context) error {
	for _, pf := range k.open {
		// Only the file this sink made: a restored attempt of the subtask,
		// which may start before this one is closed, reuses the names.
		mine, err := pf.f.Stat()
		pf.f.Close()
		if now, serr := os.Stat(k.hidden(pf.rel)); err == nil && serr == nil && os.SameFile(mine, now) {
			os.Remove(k.hidden(pf.rel))
		}
	}
	clear(k.open)
	k.last = nil
	return nil
}

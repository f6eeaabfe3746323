// Package checkpoint stores the state of checkpoints: one blob per task and
// checkpoint, written by the TaskManager running the task, and a marker per
// complete checkpoint, written by the JobManager's coordinator. The storage is a
// gocloud.dev blob bucket, so the same code keeps checkpoints in a local
// directory (file:///path, the default: TaskManagers on one host share it) or
// in object storage for a cluster: s3:// (AWS S3 and S3-compatible stores such
// as MinIO; drivers.go says which drivers are linked and how their URLs read),
// and mem:// for tests.
//
// Layout inside the bucket:
//
//	<job>/<checkpoint>/<task>   a task's state (task = "vertex.subtask")
//	<job>/complete/<checkpoint> present once the checkpoint is complete
//	<job>/final/<task>          the state a task ended with (its input did)
//	<job>/shared/<task>/<name>  a file of a task's disk state, shared by the
//	                            checkpoints that refer to it
//	<job>/<checkpoint>/refs/<task>/<owner>
//	                            the shared files checkpoint's state of task
//	                            needs, one name a line
//
// Pruning deletes a shared file when the checkpoints it deletes refer to it
// and none it keeps does (Files).
//
// A task that ended takes part in no later checkpoint: its state in those is a
// marker the coordinator writes, and a restore finds its state under final/.
//
// Object (object.go) is one blob in the same kind of bucket, read whole and
// replaced whole: the catalog's store when a server keeps it in object storage.
//
// It imports nothing of Hummer's: what it stores are bytes under names.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// ErrNotFound: no state of that task in that checkpoint.
var ErrNotFound = errors.New("checkpoint: state not found")

// Store keeps checkpoints in a bucket.
type Store struct {
	b   *blob.Bucket
	url string
	// dir is the directory of a file:// bucket, whose emptied directories
	// the store removes; "" for other buckets.
	dir string
}

// Open opens the bucket at rawURL (see bucketURL for object stores). It does
// not reach the store: Check does. A file:// bucket's directory is created if
// needed, and it writes each blob to a temporary file beside the blob, then
// renames it (fileblob's no_tmp_dir), as PostgreSQL's durable_rename and
// Flink's file system checkpoint storage do: from os.TempDir the rename fails
// for a store on another filesystem (a mounted volume, a tmpfs), and every
// checkpoint with it.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	b, dir, err := openBucket(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return &Store{b: b, url: rawURL, dir: dir}, nil
}

// openBucket opens the bucket at rawURL as Open says, and returns the
// directory of a file:// bucket ("" for others).
func openBucket(ctx context.Context, rawURL string) (b *blob.Bucket, dir string, err error) {
	orig := rawURL
	if strings.HasPrefix(rawURL, "file://") {
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", rawURL, err)
		}
		q := u.Query()
		for _, opt := range []string{"create_dir", "no_tmp_dir"} {
			if !q.Has(opt) {
				q.Set(opt, "true")
			}
		}
		if !q.Has("metadata") {
			// No sidecar file of attributes beside each blob, which the
			// store never reads, nor the MD5 of the blob it would hold.
			q.Set("metadata", "skip")
		}
		u.RawQuery = q.Encode()
		dir = u.Path
		if u.Host == "." { // file://./dir: relative
			dir = strings.TrimPrefix(dir, "/")
		}
		rawURL, dir = u.String(), filepath.FromSlash(dir)
	} else if rawURL, err = bucketURL(rawURL); err != nil {
		return nil, "", err
	}
	if b, err = blob.OpenBucket(ctx, rawURL); err != nil {
		return nil, "", fmt.Errorf("opening %s: %w", redact(orig), err)
	}
	return b, dir, nil
}

// Check reaches the store and returns an error when the bucket does not exist
// or its credentials do not let the store in: what a server checks at start-up
// rather than at its first checkpoint.
func (s *Store) Check(ctx context.Context) error {
	return checkBucket(ctx, s.b, s.url)
}

// checkBucket is Check of the bucket b opened from rawURL.
func checkBucket(ctx context.Context, b *blob.Bucket, rawURL string) error {
	ok, err := b.IsAccessible(ctx)
	if err != nil {
		return fmt.Errorf("store %s: %w", redact(rawURL), err)
	}
	if !ok {
		return fmt.Errorf("store %s: the bucket does not exist", redact(rawURL))
	}
	return nil
}

// writeAll writes blob key. Unlike blob.Bucket.WriteAll it sets no
// WriterOptions.ContentMD5, which costs an MD5 of the data to compute and
// another to check it against (a checkpoint's state can be gigabytes);
// object stores check what they receive themselves.
func (s *Store) writeAll(ctx context.Context, key string, data []byte) error {
	w, err := s.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Close releases the bucket.
func (s *Store) Close() error { return s.b.Close() }

func stateKey(job string, checkpoint int64, task string) string {
	return fmt.Sprintf("%s/%d/%s", job, checkpoint, task)
}

func completeKey(job string, checkpoint int64) string {
	return fmt.Sprintf("%s/complete/%d", job, checkpoint)
}

// Put stores one task's state of a checkpoint.
func (s *Store) Put(ctx context.Context, job string, checkpoint int64, task string, data []byte) error {
	if err := s.writeAll(ctx, stateKey(job, checkpoint, task), data); err != nil {
		return fmt.Errorf("checkpoint %d of job %s, task %s: %w", checkpoint, job, task, err)
	}
	return nil
}

// Get returns one task's state of a checkpoint, or ErrNotFound.
func (s *Store) Get(ctx context.Context, job string, checkpoint int64, task string) ([]byte, error) {
	data, err := s.b.ReadAll(ctx, stateKey(job, checkpoint, task))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%w: checkpoint %d of job %s, task %s", ErrNotFound, checkpoint, job, task)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d of job %s, task %s: %w", checkpoint, job, task, err)
	}
	return data, nil
}

func finalKey(job, task string) string { return fmt.Sprintf("%s/final/%s", job, task) }

// PutFinal stores the state a task ended with; Prune leaves it, DropJob
// deletes it.
func (s *Store) PutFinal(ctx context.Context, job, task string, data []byte) error {
	if err := s.writeAll(ctx, finalKey(job, task), data); err != nil {
		return fmt.Errorf("final state of job %s, task %s: %w", job, task, err)
	}
	return nil
}

// GetFinal returns the state a task ended with, or ErrNotFound.
func (s *Store) GetFinal(ctx context.Context, job, task string) ([]byte, error) {
	data, err := s.b.ReadAll(ctx, finalKey(job, task))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%w: final state of job %s, task %s", ErrNotFound, job, task)
	}
	if err != nil {
		return nil, fmt.Errorf("final state of job %s, task %s: %w", job, task, err)
	}
	return data, nil
}

// Complete marks a checkpoint complete: every task's state is stored.
func (s *Store) Complete(ctx context.Context, job string, checkpoint int64) error {
	if err := s.writeAll(ctx, completeKey(job, checkpoint), nil); err != nil {
		return fmt.Errorf("checkpoint %d of job %s: %w", checkpoint, job, err)
	}
	return nil
}

// Completed returns the complete checkpoints of job, oldest first.
func (s *Store) Completed(ctx context.Context, job string) ([]int64, error) {
	var ids []int64
	it := s.b.List(&blob.ListOptions{Prefix: job + "/complete/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoints of job %s: %w", job, err)
		}
		id, err := strconv.ParseInt(strings.TrimPrefix(obj.Key, job+"/complete/"), 10, 64)
		if err != nil {
			continue // not ours
		}
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Latest returns the newest complete checkpoint of job; ok is false when there
// is none.
func (s *Store) Latest(ctx context.Context, job string) (id int64, ok bool, err error) {
	ids, err := s.Completed(ctx, job)
	if err != nil || len(ids) == 0 {
		return 0, false, err
	}
	return ids[len(ids)-1], true, nil
}

// Prune deletes every checkpoint of job, complete or not, older than the keep
// newest complete ones, and the shared files that only those referred to.
func (s *Store) Prune(ctx context.Context, job string, keep int) error {
	ids, err := s.Completed(ctx, job)
	if err != nil || len(ids) <= keep {
		return err
	}
	oldest := ids[len(ids)-keep]
	// checkpointOf returns the checkpoint a key of the job belongs to, or -1.
	checkpointOf := func(key string) int64 {
		rest := strings.TrimPrefix(strings.TrimPrefix(key, job+"/"), "complete/")
		idText, _, _ := strings.Cut(rest, "/")
		// A write cut short leaves its temporary file: "<key>.<hex>.tmp".
		idText, _, _ = strings.Cut(idText, ".")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			return -1
		}
		return id
	}
	dropped, kept, err := s.sharedRefs(ctx, job, func(key string) bool { return checkpointOf(key) < oldest })
	if err != nil {
		return err
	}
	if err := s.deleteWhere(ctx, job, func(key string) bool {
		id := checkpointOf(key)
		return id >= 0 && id < oldest
	}); err != nil {
		return err
	}
	dirs := map[string]bool{}
	defer func() { s.removeEmpty(dirs) }()
	for name := range dropped {
		if kept[name] {
			continue
		}
		key := job + "/shared/" + name
		if err := s.b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return err
		}
		for d := path.Dir(key); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return nil
}

// sharedRefs reads the references of job's checkpoints to shared files: those
// of the checkpoints drop says are to go, and those of the others (newer ones
// still being taken too).
func (s *Store) sharedRefs(ctx context.Context, job string, drop func(key string) bool) (dropped, kept map[string]bool, err error) {
	dropped, kept = map[string]bool{}, map[string]bool{}
	it := s.b.List(&blob.ListOptions{Prefix: job + "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return dropped, kept, nil
		}
		if err != nil {
			return nil, nil, err
		}
		parts := strings.Split(strings.TrimPrefix(obj.Key, job+"/"), "/")
		if len(parts) != 4 || parts[1] != "refs" || strings.HasSuffix(obj.Key, ".tmp") {
			continue
		}
		data, err := s.b.ReadAll(ctx, obj.Key)
		if err != nil {
			return nil, nil, err
		}
		into := kept
		if drop(obj.Key) {
			into = dropped
		}
		for _, name := range strings.Split(string(data), "\n") {
			if name != "" {
				into[parts[2]+"/"+name] = true
			}
		}
	}
}

// Files returns the shared files of job's task (exec.StateFiles).
func (s *Store) Files(job, task string) *Files { return &Files{s: s, job: job, task: task} }

// Files are the shared files of one task of a job: the files of its disk
// state (exec.StateFiles), which checkpoints refer to instead of copying.
type Files struct {
	s         *Store
	job, task string
}

func (f *Files) key(name string) string { return fmt.Sprintf("%s/shared/%s/%s", f.job, f.task, name) }

// Upload copies the local file path to the store as name.
func (f *Files) Upload(ctx context.Context, name, path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	w, err := f.s.b.NewWriter(ctx, f.key(name), nil)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		w.Close()
		return fmt.Errorf("uploading %s: %w", name, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("uploading %s: %w", name, err)
	}
	return nil
}

// Download copies name to the local file path; the error wraps fs.ErrNotExist
// when the store lacks it.
func (f *Files) Download(ctx context.Context, name, path string) error {
	r, err := f.s.b.NewReader(ctx, f.key(name), nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%s: %w", f.key(name), fs.ErrNotExist)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	dst, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, r); err != nil {
		dst.Close()
		return fmt.Errorf("downloading %s: %w", name, err)
	}
	return dst.Close()
}

// Refer records that checkpoint's state of the task, owner's part of it,
// needs the files names.
func (f *Files) Refer(ctx context.Context, checkpoint int64, owner string, names []string) error {
	key := fmt.Sprintf("%s/%d/refs/%s/%s", f.job, checkpoint, f.task, owner)
	return f.s.writeAll(ctx, key, []byte(strings.Join(names, "\n")))
}

// DropJob deletes every checkpoint of job.
func (s *Store) DropJob(ctx context.Context, job string) error {
	return s.deleteWhere(ctx, job, func(string) bool { return true })
}

// deleteWhere deletes the blobs of job whose keys drop says, and in a file://
// bucket the directories that leaves empty (fileblob leaves them: one per
// checkpoint).
func (s *Store) deleteWhere(ctx context.Context, job string, drop func(key string) bool) error {
	dirs := map[string]bool{}
	defer func() { s.removeEmpty(dirs) }()
	it := s.b.List(&blob.ListOptions{Prefix: job + "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !drop(obj.Key) {
			continue
		}
		if err := s.b.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return err
		}
		for d := path.Dir(obj.Key); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
}

// removeEmpty removes those of dirs (keys' directories) that are empty, the
// deepest first; a directory that is not empty stays.
func (s *Store) removeEmpty(dirs map[string]bool) {
	if s.dir == "" {
		return
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Slice(sorted, func(i, j int) bool { return strings.Count(sorted[i], "/") > strings.Count(sorted[j], "/") })
	for _, d := range sorted {
		os.Remove(filepath.Join(s.dir, filepath.FromSlash(d))) // fails, harmlessly, when not empty
	}
}

package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of size bytes at a new directory, unmounted when
// the test ends: a filesystem other than os.TempDir's, as a container's
// volume is. It needs root, which CI has.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "volume")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("mounting a tmpfs (needs root, which CI runs as): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestStoreOnAnotherFilesystem: a store on a filesystem other than
// os.TempDir's takes state and completes checkpoints (fileblob's temporary
// files in os.TempDir failed every rename: invalid cross-device link).
func TestStoreOnAnotherFilesystem(t *testing.T) {
	ctx := context.Background()
	vol := mountTmpfs(t, 4<<20)
	s, err := Open(ctx, "file://"+filepath.Join(vol, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(ctx, "1", 1, "0.0", []byte("state")); err != nil {
		t.Fatalf("Put on a tmpfs: %v", err)
	}
	if err := s.Complete(ctx, "1", 1); err != nil {
		t.Fatalf("Complete on a tmpfs: %v", err)
	}
	if data, err := s.Get(ctx, "1", 1, "0.0"); err != nil || string(data) != "state" {
		t.Fatalf("Get = %q, %v", data, err)
	}
}

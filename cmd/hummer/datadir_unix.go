//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes the lock a process holds on its data directory while it
// uses the catalog and tables there (serve, jobmanager, sql), so that a second
// one does not change them under the first: an exclusive flock on DIR/LOCK,
// released when the process ends however it ends. It fails at once, naming
// the directory, when another process holds it.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another hummer process (serve, jobmanager or sql): "+
				"stop it or give --data-dir another directory (to run a script on a running server: psql -f script.sql)", dir)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

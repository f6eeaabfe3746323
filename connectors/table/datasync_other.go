//go:build !linux

package table

import "os"

// datasync flushes f (fsync where there is no fdatasync).
func datasync(f *os.File) error { return f.Sync() }

package table

import (
	"os"
	"syscall"
)

// datasync flushes f's data and what is needed to read it back (fdatasync):
// for a log written within its zero-filled length, the data alone.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

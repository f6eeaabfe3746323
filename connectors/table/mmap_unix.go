//go:build unix

package table

import (
	"os"
	"syscall"
)

func mmapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}

// fileID tells a file apart from any other, and from itself rewritten.
type fileID struct {
	dev, ino     uint64
	size, mtimeN int64
}

// fileIDOf returns fi's identity; ok is false where there is none to tell.
func fileIDOf(fi os.FileInfo) (id fileID, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtimeN: fi.ModTime().UnixNano()}, true
}

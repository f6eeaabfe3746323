//go:build !unix

package table

import (
	"io"
	"os"
)

// mmapFile reads the file where there is no mmap.
func mmapFile(f *os.File, size int64) ([]byte, func() error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}

// fileID is empty where a file cannot be told by its identity: nothing is
// cached (mapCache).
type fileID struct{}

func fileIDOf(os.FileInfo) (fileID, bool) { return fileID{}, false }

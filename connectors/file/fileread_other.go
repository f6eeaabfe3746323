//go:build !linux

package file

import "os"

// fileReader reads a regular file by position. Only Linux makes reads that the
// page cache serves without telling the scheduler (fileread_linux.go).
type fileReader struct {
	*os.File
	slowBytes int64
}

func newFileReader(f *os.File) *fileReader { return &fileReader{File: f} }

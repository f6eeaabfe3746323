package file

import (
	"io"
	"math/bits"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fileReader reads a regular file by position, like os.File's ReadAt, but makes
// each read that the page cache can serve as a raw system call (preadv2 with
// RWF_NOWAIT), one the Go scheduler is not told about. Only a read that would
// wait for the disk goes through os.File.
//
// A read from the page cache is a memory copy: the task is computing, not
// waiting. Told of such a read, the scheduler hands the task's P (its licence
// to run Go code on a core) to another thread once the call has lasted 20 µs
// (a 1 MiB read takes about 100), if no other P is idle. At parallelism 2 on
// two cores none is, so the task resumed on another thread after nearly every
// read, and three or four threads took turns on the two cores. Measured on
// WordCount over 10 x kjv through the wire (100 queries at each parallelism,
// interleaved with the build before): at parallelism 2 the server's CPU time
// fell from 232 to 201 ms a query and its wall time from 121 to 107 ms; at
// parallelism 1, 198 and 200 ms before, 194 and 196 after. The server's
// threads switched 210-290 times a query at parallelism 2 before, 50-110
// after.
type fileReader struct {
	f    *os.File
	conn syscall.RawConn
	// nowait is false once the kernel refused RWF_NOWAIT for this file.
	nowait bool
	// slowBytes counts the bytes read through os.File, for tests.
	slowBytes int64
}

func newFileReader(f *os.File) *fileReader {
	r := &fileReader{f: f}
	if c, err := f.SyscallConn(); err == nil {
		r.conn, r.nowait = c, true
	}
	return r
}

// ReadAt implements io.ReaderAt as os.File does: n < len(p) comes with an error,
// io.EOF at the end of the file.
func (r *fileReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if r.nowait && len(p) > 0 && off >= 0 {
		eof := false
		err := r.conn.Read(func(fd uintptr) bool {
			n, eof = r.readCached(fd, p, off)
			return true
		})
		switch {
		case err == nil && eof:
			return n, io.EOF
		case err == nil && n == len(p):
			return n, nil
		}
	}
	m, err := r.f.ReadAt(p[n:], off+int64(n))
	r.slowBytes += int64(m)
	return n + m, err
}

// readCached reads into p from off on as much as the page cache holds without
// waiting: n bytes, and whether the file ended there. Errors are left to the
// os.File read that follows, which reports them as usual.
func (r *fileReader) readCached(fd uintptr, p []byte, off int64) (n int, eof bool) {
	for n < len(p) {
		// At most readBlock bytes a call: the goroutine cannot be preempted
		// inside one (a buffer grown for a long line may be much larger).
		iov := unix.Iovec{Base: &p[n]}
		iov.SetLen(min(len(p)-n, readBlock))
		pos := uint64(off) + uint64(n)
		k, _, e := syscall.RawSyscall6(unix.SYS_PREADV2, fd, uintptr(unsafe.Pointer(&iov)), 1,
			uintptr(pos), uintptr(pos>>(bits.UintSize-1)>>1), unix.RWF_NOWAIT)
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.ENOSYS, syscall.EOPNOTSUPP, syscall.EINVAL:
			r.nowait = false
			return n, false
		default: // EAGAIN: not cached; or an error
			return n, false
		}
		if k == 0 {
			return n, true
		}
		n += int(k)
	}
	return n, false
}

// Close closes the file.
func (r *fileReader) Close() error { return r.f.Close() }

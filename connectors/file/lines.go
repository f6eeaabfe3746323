package file

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// readBlock is how much a lineReader asks the file for at a time: big enough that
// a read costs nothing per line, small enough to stay cheap for small files.
const readBlock = 1 << 20

// tailRead is how much a lineReader reads at a time past its range's end, where
// it only finishes the range's last line.
const tailRead = 16 << 10

// lineReader returns the lines of one subtask's byte range of a file, without their
// "\n" or "\r\n". Lines that start in (start, end] belong to the range, and for
// the range that starts the file also the line at offset 0; see the package doc.
// Lines are slices of an internal buffer, valid until the next call.
//
// The buffer is plain Go memory rather than the task's Arrow allocator: it is
// scratch space for I/O, and every byte that leaves the reader is copied into an
// Arrow buffer. Buffers of readBlock bytes come from blockPool and go back
// there on release, so that each query does not fault in fresh ones.
type lineReader struct {
	r      io.ReaderAt
	size   int64 // bytes of the file to read: its size when opened
	end    int64 // lines that start at or before end belong to the range
	buf    []byte
	off    int64 // file offset of buf[0]
	lo, hi int   // buf[lo:hi] is read but not yet returned
	scan   int   // buf[lo:scan] is known to hold no '\n'
	first  int64 // file offset of the range's first line
	line   int64 // lines returned so far (the 1-based number of the last one)
}

// newLineReader reads the lines of r (size bytes long) that start in the range
// (start, end]. With skipFirst false it reads the line that starts at start too,
// so start must start a line: 0, or an offset just after a '\n' (where a
// checkpoint resumes). Every subtask but the first skips the line that straddles
// its start: the subtask before it reads that line through to its end.
func newLineReader(r io.ReaderAt, size, start, end int64, skipFirst bool, block int) (*lineReader, error) {
	lr := &lineReader{r: r, size: size}
	if block == readBlock {
		lr.buf = *blockPool.Get().(*[]byte)
	} else {
		lr.buf = make([]byte, block)
	}
	if err := lr.reset(start, end, skipFirst); err != nil {
		lr.release()
		return nil, err
	}
	return lr, nil
}

// blockPool holds read buffers of readBlock bytes.
var blockPool = sync.Pool{New: func() any {
	b := make([]byte, readBlock)
	return &b
}}

// release gives the buffer back; lr must not be used afterwards. A buffer that
// grew for a long line goes to the collector instead.
func (lr *lineReader) release() {
	if b := lr.buf; len(b) == readBlock {
		blockPool.Put(&b)
	}
	lr.buf = nil
}

// reset makes lr read the range (start, end] of the same file, as
// newLineReader does, reusing its buffer.
func (lr *lineReader) reset(start, end int64, skipFirst bool) error {
	lr.end, lr.off = end, start
	lr.lo, lr.hi, lr.scan, lr.line = 0, 0, 0, 0
	if skipFirst {
		if err := lr.skipLine(); err != nil {
			return err
		}
	}
	lr.first = lr.pos()
	return nil
}

// rewind makes lr read on from pos, the start of a line it has returned lines
// past, counting that line as line+1 (after a CSV record that ran on over lines
// it should not have).
func (lr *lineReader) rewind(pos, line int64) {
	if pos >= lr.off && pos <= lr.off+int64(lr.hi) {
		lr.lo = int(pos - lr.off)
		lr.scan = lr.lo
	} else {
		lr.off, lr.lo, lr.hi, lr.scan = pos, 0, 0, 0
	}
	lr.line = line
}

// pos is the file offset of the next unread byte.
func (lr *lineReader) pos() int64 { return lr.off + int64(lr.lo) }

// remaining is an upper bound on the bytes left to return, short of a line that
// runs past the range's end.
func (lr *lineReader) remaining() int64 { return max(0, min(lr.end+1, lr.size)-lr.pos()) }

func (lr *lineReader) atEOF() bool { return lr.off+int64(lr.hi) >= lr.size }

// next returns the next line of the range, or ok=false after the last.
func (lr *lineReader) next() (line []byte, ok bool, err error) {
	if p := lr.pos(); p > lr.end || p >= lr.size {
		return nil, false, nil
	}
	return lr.nextLine()
}

// nextLine returns the next line of the file, in the range or past its end
// (where a CSV record the range holds runs on, inside a quoted field), or
// ok=false at the end of the file.
func (lr *lineReader) nextLine() (line []byte, ok bool, err error) {
	if lr.pos() >= lr.size {
		return nil, false, nil
	}
	for {
		if i := bytes.IndexByte(lr.buf[lr.scan:lr.hi], '\n'); i >= 0 {
			nl := lr.scan + i
			line = lr.buf[lr.lo:nl]
			lr.lo, lr.scan = nl+1, nl+1
			lr.line++
			return dropCR(line), true, nil
		}
		lr.scan = lr.hi
		if lr.atEOF() {
			if lr.lo == lr.hi {
				return nil, false, nil
			}
			// The file's last line has no newline.
			line = lr.buf[lr.lo:lr.hi]
			lr.lo = lr.hi
			lr.line++
			return dropCR(line), true, nil
		}
		if err := lr.fill(); err != nil {
			return nil, false, err
		}
	}
}

// nextBuffered returns the next line of the range when the buffer holds all
// of it, through its '\n', without reading more of the file; otherwise
// ok=false, and nothing is consumed. Unlike next's, the lines it returns stay
// valid until the next call that reads the file (next, nextLine, skipLine): a
// caller may hold many of them at once.
func (lr *lineReader) nextBuffered() (line []byte, ok bool) {
	if p := lr.pos(); p > lr.end || p >= lr.size {
		return nil, false
	}
	i := bytes.IndexByte(lr.buf[lr.scan:lr.hi], '\n')
	if i < 0 {
		lr.scan = lr.hi
		return nil, false
	}
	nl := lr.scan + i
	line = lr.buf[lr.lo:nl]
	lr.lo, lr.scan = nl+1, nl+1
	lr.line++
	return dropCR(line), true
}

// skipLine consumes everything through the first '\n' (or to the end of the file).
func (lr *lineReader) skipLine() error {
	for {
		if i := bytes.IndexByte(lr.buf[lr.scan:lr.hi], '\n'); i >= 0 {
			lr.lo = lr.scan + i + 1
			lr.scan = lr.lo
			return nil
		}
		// Nothing read so far is needed: drop it rather than let a long line grow
		// the buffer.
		lr.lo, lr.scan = lr.hi, lr.hi
		if lr.atEOF() {
			return nil
		}
		if err := lr.fill(); err != nil {
			return err
		}
	}
}

// fill reads more of the file after buf[hi], first moving the unreturned bytes to
// the front of the buffer and growing it when a line fills it entirely.
func (lr *lineReader) fill() error {
	if lr.lo > 0 {
		n := copy(lr.buf, lr.buf[lr.lo:lr.hi])
		lr.off += int64(lr.lo)
		lr.scan -= lr.lo
		lr.hi, lr.lo = n, 0
	}
	if lr.hi == len(lr.buf) {
		nb := make([]byte, 2*len(lr.buf))
		copy(nb, lr.buf[:lr.hi])
		lr.buf = nb
	}
	// Past the range's end only the line that straddles it is left to read:
	// read up to tailRead bytes at a time for it, rather than a whole buffer.
	at := lr.off + int64(lr.hi)
	want := int(min(int64(len(lr.buf)-lr.hi), lr.size-at, max(lr.end+1-at, tailRead)))
	n, err := lr.r.ReadAt(lr.buf[lr.hi:lr.hi+want], lr.off+int64(lr.hi))
	lr.hi += n
	if n < want {
		if err != nil && err != io.EOF {
			return fmt.Errorf("read at offset %d: %w", lr.off+int64(lr.hi), err)
		}
		// The file shrank since it was opened: stop where it now ends.
		lr.size = lr.off + int64(lr.hi)
	}
	return nil
}

func dropCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// countLines returns the number of '\n' in the first n bytes of r: the line number
// base of a range that starts at n, computed only when a bad record is reported.
func countLines(r io.ReaderAt, n int64) (int64, error) {
	buf := make([]byte, min(n, readBlock))
	var lines int64
	for off := int64(0); off < n; {
		k := int(min(int64(len(buf)), n-off))
		got, err := r.ReadAt(buf[:k], off)
		lines += int64(bytes.Count(buf[:got], []byte{'\n'}))
		off += int64(got)
		if got < k {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return lines, err
		}
	}
	return lines, nil
}

// csvRecordStart returns where the first CSV record that starts after offset
// start begins: just after the first '\n' at or past start that is outside
// quotes, which it is when the quotes before it are even in number (RFC 4180:
// a field's quotes open and close it, and a quote inside is doubled). That
// counts the quotes of everything before start, at memchr's speed, far less
// than parsing it. For a file with a quote out of place (a bad record, which
// fails the read of the subtask whose record holds it) the count is off for
// the ranges after it; bad_rows=skip therefore reads CSV in one subtask. The
// result is size when no record starts after start.
func csvRecordStart(r io.ReaderAt, size, start int64) (int64, error) {
	buf := make([]byte, min(size, readBlock))
	quotes := 0
	for off := int64(0); off < size; {
		k := int(min(int64(len(buf)), size-off))
		got, err := r.ReadAt(buf[:k], off)
		if got < k {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("read at offset %d: %w", off+int64(got), err)
		}
		b := buf[:got]
		if off+int64(got) <= start {
			quotes += bytes.Count(b, []byte{'"'})
			off += int64(got)
			continue
		}
		from := 0
		if off < start {
			from = int(start - off)
			quotes += bytes.Count(b[:from], []byte{'"'})
		}
		for i := from; i < len(b); i++ {
			switch b[i] {
			case '"':
				quotes++
			case '\n':
				if quotes%2 == 0 {
					return off + int64(i) + 1, nil
				}
			}
		}
		off += int64(got)
	}
	return size, nil
}

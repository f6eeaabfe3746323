package table

import (
	"os"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/vector"
)

// mapFile maps the segment file read-only and returns its bytes and the
// function that unmaps them. Nothing read from the bytes may outlive unmap:
// what distinct's samples and the key indexes keep is copied (copyArray).
// Scans read the mappings segmentMaps keeps instead.
func mapFile(f *os.File) (data []byte, unmap func() error, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	return mmapFile(f, st.Size())
}

// mappedSegment is a segment file mapped for its layout: the IPC reader finds
// each buffer in the mapping without reading it, and copyArray then reads
// the buffers a scan needs with pread into memory of its allocator. Reading
// them through the mapping instead would fault its pages in on every scan.
type mappedSegment struct {
	f    *os.File
	data []byte
}

// copyArray copies a, whose buffers lie in the mapping, into memory of mem:
// only its own buffers, so a segment's other columns are never read.
func (m mappedSegment) copyArray(mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	d, err := m.copyData(mem, a.Data())
	if err != nil {
		return nil, err
	}
	defer d.Release()
	return array.MakeFromData(d), nil
}

func (m mappedSegment) copyData(mem memory.Allocator, d arrow.ArrayData) (arrow.ArrayData, error) {
	bufs := make([]*memory.Buffer, len(d.Buffers()))
	children := make([]arrow.ArrayData, len(d.Children()))
	release := func() {
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
		for _, c := range children {
			if c != nil {
				c.Release()
			}
		}
	}
	defer release()
	for i, b := range d.Buffers() {
		if b == nil {
			continue
		}
		nb := vector.NewBuffer(mem, b.Len()) // read overwrites it all
		bufs[i] = nb
		if err := m.read(nb.Bytes(), b.Bytes()); err != nil {
			return nil, err
		}
	}
	for i, c := range d.Children() {
		cd, err := m.copyData(mem, c)
		if err != nil {
			return nil, err
		}
		children[i] = cd
	}
	return array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset()), nil
}

// read fills dst with src, a slice of the mapping, by pread at src's offset
// in the file; src from anywhere else (memory the reader allocated) is
// copied.
func (m mappedSegment) read(dst, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	if len(m.data) == 0 || at < base || at+uintptr(len(src)) > base+uintptr(len(m.data)) {
		copy(dst, src)
		return nil
	}
	_, err := m.f.ReadAt(dst, int64(at-base))
	return err
}

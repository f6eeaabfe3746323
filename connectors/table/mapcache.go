package table

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/vector"
)

// segmentMaps keeps the segment files that scans read mapped from one scan to
// the next, so that a scan's batches reference the mapping's pages (view)
// instead of copies of them. Copying a column's buffers out with pread cost
// about three times reading them where a warm mapping has them (TPC-H q6 spent
// half its CPU in pread); mapping each file afresh per scan cost as much as
// the copy, in page faults and munmap. Segment files never change once
// written: a file is known by its device, inode, size and modification time.
//
// The mapped pages a scan touched count in the server's RSS for as long as
// the file stays mapped; they are clean file pages, which the kernel reclaims
// under memory pressure like the rest of the page cache.
var segmentMaps = &mapCache{files: map[string]*mapping{}, budget: mapBudget}

// mapBudget bounds the bytes of the files the cache keeps mapped (address
// space, not memory: only pages read are resident).
const mapBudget = 8 << 30

// mapCache maps files by path: see segmentMaps.
type mapCache struct {
	mu     sync.Mutex
	files  map[string]*mapping
	bytes  int64 // of the files in files
	budget int64
	tick   uint64 // for least recently used first
}

// mapping is one file's mapping. It stays mapped while anything holds a
// reference (refs): the cache, while the file is in it; each scan that
// acquired it, until it releases it; and each buffer that views it, until the
// buffer's last Release (the mapping is the buffer's allocator, see Free).
type mapping struct {
	data  []byte
	id    fileID
	used  uint64 // the cache's tick when last acquired
	refs  atomic.Int64
	unmap func() error
}

// acquire returns path's mapping with a reference the caller must release: the
// cached one if the file is the one mapped, else a new mapping (cached when
// the file can be told by its identity). A miss first lets go of the mappings
// of files gone or replaced (as the store does when it removes files).
func (c *mapCache) acquire(path string) (*mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping does not need the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	id, cacheable := fileIDOf(fi)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if m := c.files[path]; m != nil {
		if cacheable && m.id == id {
			m.used = c.tick
			m.refs.Add(1)
			return m, nil
		}
		c.drop(path, m)
	}
	c.sweep()
	data, unmap, err := mmapFile(f, fi.Size())
	if err != nil {
		return nil, err
	}
	m := &mapping{data: data, id: id, used: c.tick, unmap: unmap}
	m.refs.Store(1) // the caller's
	if cacheable && len(data) > 0 {
		m.refs.Add(1) // the cache's
		c.files[path] = m
		c.bytes += int64(len(data))
		c.trim(m)
	}
	return m, nil
}

// drop takes path's mapping m out of the cache. Lock should be held.
func (c *mapCache) drop(path string, m *mapping) {
	delete(c.files, path)
	c.bytes -= int64(len(m.data))
	m.release()
}

// forget lets go of the mappings of the files the store removed: the paths
// given, and every file under dir if dir is not empty. Their disk space comes
// back once no batch views them.
func (c *mapCache) forget(dir string, paths ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		if m := c.files[p]; m != nil {
			c.drop(p, m)
		}
	}
	if dir == "" {
		return
	}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	for p, m := range c.files {
		if strings.HasPrefix(p, prefix) {
			c.drop(p, m)
		}
	}
}

// sweep drops the mappings of files that are gone or replaced. Lock should
// be held.
func (c *mapCache) sweep() {
	for path, m := range c.files {
		fi, err := os.Stat(path)
		if err != nil {
			c.drop(path, m)
			continue
		}
		if id, _ := fileIDOf(fi); id != m.id {
			c.drop(path, m)
		}
	}
}

// trim drops least recently used mappings, other than keep, until the cache
// is within its budget. Lock should be held.
func (c *mapCache) trim(keep *mapping) {
	for c.bytes > c.budget {
		var (
			oldest     *mapping
			oldestPath string
		)
		for path, m := range c.files {
			if m != keep && (oldest == nil || m.used < oldest.used) {
				oldest, oldestPath = m, path
			}
		}
		if oldest == nil {
			return
		}
		c.drop(oldestPath, oldest)
	}
}

// release lets go of one reference; the last unmaps.
func (m *mapping) release() {
	if m.refs.Add(-1) == 0 && m.unmap != nil {
		m.unmap()
	}
}

// A mapping is the allocator of the buffers that view it, so that a buffer's
// last Release lets go of its reference (Free). Such a buffer is not mutable;
// one grown anyway moves to Go memory and still holds its reference until
// freed.
var _ memory.Allocator = (*mapping)(nil)

func (m *mapping) Allocate(size int) []byte { return make([]byte, size) }

func (m *mapping) Reallocate(size int, b []byte) []byte {
	nb := make([]byte, size)
	copy(nb, b)
	return nb
}

func (m *mapping) Free([]byte) { m.release() }

// holds reports whether b lies within the mapping.
func (m *mapping) holds(b []byte) bool {
	if len(m.data) == 0 || len(b) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return at >= base && at+uintptr(len(b)) <= base+uintptr(len(m.data))
}

// view returns a, an array the IPC reader made over the mapping, as an array
// whose buffers reference the mapping and hold it mapped until released: only
// a's own buffers, so a segment's other columns are never read. Buffers the
// reader allocated (not in the mapping) are copied into memory of mem.
func (m *mapping) view(mem memory.Allocator, a arrow.Array) arrow.Array {
	d := m.viewData(mem, a.Data())
	defer d.Release()
	return array.MakeFromData(d)
}

func (m *mapping) viewData(mem memory.Allocator, d arrow.ArrayData) arrow.ArrayData {
	bufs := make([]*memory.Buffer, len(d.Buffers()))
	for i, b := range d.Buffers() {
		switch {
		case b == nil:
		case m.holds(b.Bytes()):
			m.refs.Add(1)
			bufs[i] = memory.NewBufferWithAllocator(b.Bytes(), m)
		default:
			nb := vector.NewBuffer(mem, b.Len()) // the copy overwrites it all
			copy(nb.Bytes(), b.Bytes())
			bufs[i] = nb
		}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		children[i] = m.viewData(mem, c)
	}
	out := array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset())
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	for _, c := range children {
		c.Release()
	}
	return out
}

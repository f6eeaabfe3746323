package file

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// writeRandomFile writes n pseudo-random bytes to a new file and returns them
// and the file, open for reading.
func writeRandomFile(t *testing.T, n int) ([]byte, *os.File) {
	t.Helper()
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return data, f
}

// TestFileReaderMatchesOSFile checks that fileReader returns what os.File's
// ReadAt does, bytes, counts and errors, for reads inside, across and past the
// end of a file, and that a file just written, which the page cache holds, is
// read without going through os.File.
func TestFileReaderMatchesOSFile(t *testing.T) {
	const size = 3<<20 + 12345
	data, f := writeRandomFile(t, size)
	r := newFileReader(f)
	cases := [][2]int{{0, 0}, {0, 1}, {0, readBlock}, {1, readBlock}, {size - 10, 10}, {size - 10, 11},
		{size - 10, readBlock}, {size, 1}, {size + 5, 7}, {0, size}, {0, size + 1}, {readBlock - 3, 2 * readBlock}}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		cases = append(cases, [2]int{rng.IntN(size + 100), rng.IntN(2 * readBlock)})
	}
	for _, c := range cases {
		off, n := c[0], c[1]
		got := make([]byte, n)
		gn, gerr := r.ReadAt(got, int64(off))
		want := make([]byte, n)
		wn, werr := f.ReadAt(want, int64(off))
		if gn != wn || !errors.Is(gerr, werr) || !bytes.Equal(got[:gn], want[:wn]) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; os.File gives %d, %v (bytes equal: %v)",
				n, off, gn, gerr, wn, werr, bytes.Equal(got[:gn], want[:wn]))
		}
		if wn > 0 && !bytes.Equal(got[:gn], data[off:off+gn]) {
			t.Fatalf("ReadAt(%d bytes at %d) does not return the file's bytes", n, off)
		}
	}
	if !r.nowait {
		t.Skip("this kernel or file system refuses RWF_NOWAIT reads")
	}
	if r.slowBytes != 0 {
		t.Fatalf("%d bytes of a cached file were read through os.File", r.slowBytes)
	}
}

// TestFileReaderUncached reads a file whose pages were dropped from the page
// cache: the reads that would wait for the disk go through os.File, and the
// bytes are still the file's.
func TestFileReaderUncached(t *testing.T) {
	const size = 8 << 20
	data, f := writeRandomFile(t, size)
	if err := f.Sync(); err != nil { // dirty pages cannot be dropped
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, size, unix.FADV_DONTNEED); err != nil {
		t.Skipf("cannot drop the file's pages: %v", err)
	}
	r := newFileReader(f)
	got := make([]byte, size+readBlock)
	n := 0
	for {
		k, err := r.ReadAt(got[n:n+readBlock], int64(n))
		n += k
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got[:n], data) {
		t.Fatalf("read %d bytes, not the file's %d", n, size)
	}
	if r.nowait && r.slowBytes == 0 {
		t.Skip("the file system kept the pages cached; the path through os.File went untested")
	}
	t.Logf("%d of %d bytes were read through os.File", r.slowBytes, size)
}

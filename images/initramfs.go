package images

import (
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/cavaliergopher/cpio"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compressions an initramfs can have, with the CONFIG_ symbol a kernel needs to
// unpack each. "auto" picks the first of autoCompressions the kernel has.
var compressions = map[string]string{
	"gzip": "CONFIG_RD_GZIP",
	"lz4":  "CONFIG_RD_LZ4",
	"zstd": "CONFIG_RD_ZSTD",
	"none": "",
}

// autoCompressions is the order "auto" tries. Under TCG the kernel's unpacking
// is emulated and sits on the boot's critical path: lz4 costs the VM about
// 0.25 CPU s less than gzip for 15% more bytes (bench/cmd/image measures both).
var autoCompressions = []string{"lz4", "gzip", "zstd"}

// pickCompression resolves "auto" (or checks a named compression) against the
// kernel's configuration; with no configuration known, auto means none, which
// every kernel unpacks.
func pickCompression(name string, config map[string]string) (string, error) {
	if name == "" || name == "auto" {
		if config == nil {
			return "none", nil
		}
		for _, c := range autoCompressions {
			if config[compressions[c]] == "y" {
				return c, nil
			}
		}
		return "none", nil
	}
	sym, ok := compressions[name]
	if !ok {
		return "", fmt.Errorf("unknown initramfs compression %q (want auto, gzip, lz4, zstd or none)", name)
	}
	if sym != "" && config != nil && config[sym] != "y" {
		return "", fmt.Errorf("%w: the kernel cannot unpack a %s initramfs (%s is not set)", ErrKernel, name, sym)
	}
	return name, nil
}

// compressor wraps w in the named compression.
func compressor(name string, w io.Writer) (io.WriteCloser, string, error) {
	switch name {
	case "gzip":
		z, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
		return z, ".gz", err
	case "lz4":
		// The kernel unpacks only the legacy lz4 frame (lz4 -l).
		z := lz4.NewWriter(w)
		err := z.Apply(lz4.LegacyOption(true), lz4.CompressionLevelOption(lz4.Level9))
		return z, ".lz4", err
	case "zstd":
		// The kernel's decompressor keeps the window in memory: stay at 8 MiB.
		z, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithWindowSize(8<<20))
		return z, ".zst", err
	case "none":
		return nopCloser{w}, "", nil
	}
	return nil, "", fmt.Errorf("unknown compression %q", name)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// fileEntry is one file of an initramfs: from a file on the host (src) or
// from memory (data); a directory when dir is set.
type fileEntry struct {
	name string // absolute path in the image
	mode os.FileMode
	dir  bool
	src  string
	data []byte
}

// initramfs collects the files of an image and writes them as a newc cpio
// archive, the format the kernel unpacks into its root file system.
type initramfs struct {
	files map[string]fileEntry
}

func newInitramfs() *initramfs { return &initramfs{files: map[string]fileEntry{}} }

// mkdirAll records name and its parents as directories.
func (r *initramfs) mkdirAll(name string) {
	for d := path.Clean(name); d != "/" && d != "."; d = path.Dir(d) {
		if _, ok := r.files[d]; ok {
			continue
		}
		r.files[d] = fileEntry{name: d, mode: 0o755, dir: true}
	}
}

// add records a file (and its parent directories), replacing one of that name.
func (r *initramfs) add(e fileEntry) error {
	e.name = path.Clean("/" + e.name)
	if prev, ok := r.files[e.name]; ok && prev.dir != e.dir {
		return fmt.Errorf("%s is both a file and a directory in the image", e.name)
	}
	r.mkdirAll(path.Dir(e.name))
	r.files[e.name] = e
	return nil
}

// write writes the archive: directories before what they hold (sorted names do
// that), every file owned by root, with mtime t so the same inputs give the same
// bytes.
func (r *initramfs) write(w io.Writer, t time.Time) error {
	names := make([]string, 0, len(r.files))
	for n := range r.files {
		names = append(names, n)
	}
	slices.Sort(names)
	cw := cpio.NewWriter(w)
	for _, n := range names {
		e := r.files[n]
		hdr := &cpio.Header{Name: strings.TrimPrefix(n, "/"), Mode: cpio.FileMode(e.mode.Perm()), Links: 1, ModTime: t}
		if e.dir {
			hdr.Mode |= cpio.TypeDir
			hdr.Links = 2
			if err := cw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Mode |= cpio.TypeReg
		if e.src == "" {
			hdr.Size = int64(len(e.data))
			if err := cw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := cw.Write(e.data); err != nil {
				return err
			}
			continue
		}
		if err := copyFileInto(cw, hdr, e.src); err != nil {
			return err
		}
	}
	return cw.Close()
}

func copyFileInto(cw *cpio.Writer, hdr *cpio.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Size = st.Size()
	if err := cw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(cw, f)
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s changed size while it was copied", src)
	}
	return err
}

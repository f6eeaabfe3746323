package images

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// testELF is a minimal ELF64 image with one PT_NOTE segment holding notes,
// then filler standing for the kernel's segments.
func testELF(t *testing.T, notes []byte) []byte {
	t.Helper()
	le := binary.LittleEndian
	const ehsize, phsize = 64, 56
	b := make([]byte, ehsize+phsize)
	copy(b, []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	le.PutUint16(b[16:], uint16(elf.ET_EXEC))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[32:], ehsize) // e_phoff
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[54:], phsize)
	le.PutUint16(b[56:], 1) // e_phnum
	ph := b[ehsize:]
	le.PutUint32(ph[0:], uint32(elf.PT_NOTE))
	le.PutUint64(ph[8:], uint64(len(b))) // p_offset
	le.PutUint64(ph[32:], uint64(len(notes)))
	le.PutUint64(ph[40:], uint64(len(notes)))
	b = append(b, notes...)
	return append(b, bytes.Repeat([]byte("kernel text "), 1000)...)
}

// note encodes one ELF note.
func note(owner string, typ uint32, desc []byte) []byte {
	pad := func(b []byte) []byte { return append(b, make([]byte, (4-len(b)%4)%4)...) }
	h := make([]byte, 12)
	binary.LittleEndian.PutUint32(h, uint32(len(owner)+1))
	binary.LittleEndian.PutUint32(h[4:], uint32(len(desc)))
	binary.LittleEndian.PutUint32(h[8:], typ)
	return append(append(h, pad(append([]byte(owner), 0))...), pad(desc)...)
}

// testBzImage wraps payload in a bzImage's setup header as the boot protocol
// 2.08+ locates it: one setup sector after the boot sector, then the
// protected-mode code, whose payload_offset bytes precede the payload.
func testBzImage(payload []byte) []byte {
	b := make([]byte, 2*512+100)
	b[0x1f1] = 1 // setup_sects
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x20f)
	binary.LittleEndian.PutUint32(b[0x248:], 100)
	binary.LittleEndian.PutUint32(b[0x24c:], uint32(len(payload)))
	return append(b, payload...)
}

func compressLZ4(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := lz4.NewWriter(&out)
	if err := w.Apply(lz4.LegacyOption(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The kernel's build appends the uncompressed size after the frames.
	return binary.LittleEndian.AppendUint32(out.Bytes(), uint32(len(b)))
}

func compressGzip(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	// The kernel's build appends the uncompressed size after the stream.
	return binary.LittleEndian.AppendUint32(out.Bytes(), uint32(len(b)))
}

func TestPVHKernel(t *testing.T) {
	pvh := testELF(t, append(note("Xen", 6, []byte("linux")), note("Xen", xenELFNotePhys32Entry, []byte{0, 0, 0, 1})...))
	// Over 8 MiB: the lz4 legacy format splits it into blocks.
	big := append(append([]byte(nil), pvh...), make([]byte, 20<<20)...)
	for i := len(pvh); i < len(big); i += 4096 {
		big[i] = byte(i >> 12)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		want    []byte // the ELF image unpacked, or nil for errNoPVH
	}{
		{"lz4", compressLZ4(t, pvh), pvh},
		{"gzip", compressGzip(t, pvh), pvh},
		{"without a PVH note", compressLZ4(t, testELF(t, note("Xen", 6, []byte("linux")))), nil},
		{"a PVH note type from another owner", compressLZ4(t, testELF(t, note("GNU", xenELFNotePhys32Entry, []byte{1, 2, 3, 4}))), nil},
		{"xz", append([]byte{0xfd, '7', 'z', 'X', 'Z', 0}, pvh...), nil},
		{"lz4 over several blocks", compressLZ4(t, big), big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cache := t.TempDir(), t.TempDir()
			bz := dir + "/vmlinuz"
			if err := os.WriteFile(bz, testBzImage(tc.payload), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := PVHKernel(bz, cache)
			if tc.want == nil {
				if !errors.Is(err, errNoPVH) {
					t.Fatalf("PVHKernel = %q, %v; want errNoPVH", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(got)
			if err != nil || !bytes.Equal(b, tc.want) {
				t.Fatalf("unpacked kernel differs from the ELF image packed (%d bytes against %d), err %v", len(b), len(tc.want), err)
			}
			// The second time, the cached file is the answer: not unpacked again.
			if err := os.WriteFile(got, []byte("cached"), 0o600); err != nil {
				t.Fatal(err)
			}
			again, err := PVHKernel(bz, cache)
			if b, _ := os.ReadFile(again); err != nil || again != got || string(b) != "cached" {
				t.Fatalf("second PVHKernel = %q, %v (content %q): want the cached %q", again, err, b, got)
			}
		})
	}
	t.Run("corrupt lz4", func(t *testing.T) {
		p := compressLZ4(t, big)
		for _, bad := range [][]byte{p[:len(p)/2], append(p[:len(p)-4:len(p)-4], 1, 2, 3, 4)} {
			bz := t.TempDir() + "/vmlinuz"
			os.WriteFile(bz, testBzImage(bad), 0o644)
			if k, err := PVHKernel(bz, t.TempDir()); !errors.Is(err, ErrKernel) {
				t.Fatalf("PVHKernel of a corrupt payload = %q, %v; want ErrKernel", k, err)
			}
		}
	})
	t.Run("not a bzImage", func(t *testing.T) {
		p := t.TempDir() + "/vmlinuz"
		os.WriteFile(p, bytes.Repeat([]byte{0x90}, 4096), 0o644)
		if _, err := PVHKernel(p, t.TempDir()); !errors.Is(err, ErrKernel) {
			t.Fatalf("err = %v, want ErrKernel", err)
		}
	})
}

package images

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pierrec/lz4/v4"
)

// A bzImage is a decompressor wrapped around the compressed kernel (its
// payload). Booting it under TCG means emulating that decompressor: copying
// itself aside, unpacking 50 MB and moving the kernel's segments into place,
// about 0.2 s before the kernel's first instruction. A kernel built with
// CONFIG_PVH can instead be booted from its uncompressed ELF image through its
// PVH entry point: qemu loads the segments itself, at native speed. Images keep
// the bzImage (small, and bootable by any loader); Start boots the ELF image
// unpacked from it into the cache the first time, when the kernel has a PVH
// entry point.

// xenELFNotePhys32Entry is the ELF note (owner "Xen") that gives a kernel's
// 32-bit PVH entry point.
const xenELFNotePhys32Entry = 18

// errNoPVH says a kernel cannot be booted through a PVH entry point, or that
// its payload is in a format PVHKernel does not unpack: Start boots the bzImage.
var errNoPVH = errors.New("no PVH entry point")

// PVHKernel returns the uncompressed ELF image of the bzImage at path, unpacked
// under cacheDir the first time (named after the bzImage's SHA-256), when the
// kernel has a PVH entry point; errNoPVH (wrapped) when it has none or its
// payload is neither lz4 nor gzip.
func PVHKernel(path, cacheDir string) (string, error) {
	bz, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(bz)
	out := filepath.Join(cacheDir, "pvh", hex.EncodeToString(sum[:16])+".vmlinux")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	vmlinux, err := bzImagePayload(bz)
	if err != nil {
		return "", err
	}
	if err := checkPVH(vmlinux); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	// Written aside and renamed, so a VM started meanwhile never finds half a
	// kernel.
	tmp, err := os.CreateTemp(filepath.Dir(out), ".vmlinux-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(vmlinux); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return out, os.Rename(tmp.Name(), out)
}

// bzImagePayload unpacks the kernel a bzImage carries: the boot protocol's
// payload_offset and payload_length (version 2.08 and later) locate it after
// the setup sectors.
func bzImagePayload(bz []byte) ([]byte, error) {
	if len(bz) < 0x250 || string(bz[0x202:0x206]) != "HdrS" {
		return nil, fmt.Errorf("%w: not a bzImage", ErrKernel)
	}
	if binary.LittleEndian.Uint16(bz[0x206:]) < 0x208 {
		return nil, fmt.Errorf("%w: boot protocol before 2.08 does not locate the payload", errNoPVH)
	}
	setup := int(bz[0x1f1])
	if setup == 0 {
		setup = 4
	}
	start := (setup+1)*512 + int(binary.LittleEndian.Uint32(bz[0x248:]))
	end := start + int(binary.LittleEndian.Uint32(bz[0x24c:]))
	if start >= end || end > len(bz) {
		return nil, fmt.Errorf("%w: payload outside the bzImage", ErrKernel)
	}
	payload := bz[start:end]
	var r io.Reader
	switch {
	case bytes.HasPrefix(payload, lz4LegacyMagic):
		return unlz4Legacy(payload)
	case bytes.HasPrefix(payload, []byte{0x1f, 0x8b}):
		z, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return nil, fmt.Errorf("%w: payload: %v", ErrKernel, err)
		}
		z.Multistream(false) // the kernel's build appends its size after the stream
		r = z
	default:
		return nil, fmt.Errorf("%w: payload compressed other than lz4 or gzip", errNoPVH)
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, r); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrKernel, err)
	}
	return b.Bytes(), nil
}

// lz4LegacyMagic starts an LZ4 legacy frame, the format of the kernel's lz4
// payloads.
var lz4LegacyMagic = []byte{0x02, 0x21, 0x4c, 0x18}

// unlz4Legacy unpacks the kernel's lz4 payload: legacy frames (the magic, then
// blocks that each give at most 8 MiB, each after its compressed size), then
// the uncompressed size the kernel's build appends. Block by block into one
// buffer of that size, it takes a third of the time of lz4's streaming Reader.
func unlz4Legacy(p []byte) ([]byte, error) {
	bad := func(why string) error { return fmt.Errorf("%w: lz4 payload: %s", ErrKernel, why) }
	if len(p) < 8 {
		return nil, bad("truncated")
	}
	size := int(binary.LittleEndian.Uint32(p[len(p)-4:]))
	p = p[:len(p)-4]
	if size > 255*len(p) { // lz4 cannot expand more (and a corrupt trailer must not allocate gigabytes)
		return nil, bad(fmt.Sprintf("its trailer says %d bytes from %d", size, len(p)))
	}
	out := make([]byte, 0, size)
	for len(p) > 0 {
		if bytes.HasPrefix(p, lz4LegacyMagic) {
			p = p[4:]
			continue
		}
		if len(p) < 4 {
			return nil, bad("truncated block header")
		}
		n := int(binary.LittleEndian.Uint32(p))
		if n > len(p)-4 {
			return nil, bad("block runs past the payload")
		}
		dst := out[len(out):min(cap(out), len(out)+8<<20)]
		k, err := lz4.UncompressBlock(p[4:4+n], dst)
		if err != nil {
			return nil, bad(err.Error())
		}
		out = out[:len(out)+k]
		p = p[4+n:]
	}
	if len(out) != cap(out) {
		return nil, bad(fmt.Sprintf("%d bytes unpacked, its trailer says %d", len(out), cap(out)))
	}
	return out, nil
}

// checkPVH reports (errNoPVH) whether the ELF image vmlinux lacks a PVH entry
// point.
func checkPVH(vmlinux []byte) error {
	f, err := elf.NewFile(bytes.NewReader(vmlinux))
	if err != nil {
		return fmt.Errorf("%w: payload is not an ELF image: %v", ErrKernel, err)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		notes, err := io.ReadAll(p.Open())
		if err != nil {
			return fmt.Errorf("%w: %v", ErrKernel, err)
		}
		if hasNote(notes, f.ByteOrder, "Xen", xenELFNotePhys32Entry) {
			return nil
		}
	}
	return fmt.Errorf("%w: the kernel was built without CONFIG_PVH", errNoPVH)
}

// hasNote reports whether the ELF notes b hold one of owner and type typ.
func hasNote(b []byte, bo binary.ByteOrder, owner string, typ uint32) bool {
	align4 := func(n uint32) uint32 { return (n + 3) &^ 3 }
	for len(b) >= 12 {
		namesz, descsz, t := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		if uint64(align4(namesz))+uint64(align4(descsz)) > uint64(len(b)) {
			return false
		}
		name := string(bytes.TrimRight(b[:namesz], "\x00"))
		if name == owner && t == typ {
			return true
		}
		b = b[align4(namesz)+align4(descsz):]
	}
	return false
}

package images

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DebianKernelPackage is the package a kernel comes from when Build is given
// none: Debian's kernel for cloud VMs, small because it only has the drivers a
// hypervisor's guest needs, with virtio as modules.
const DebianKernelPackage = "linux-image-cloud-amd64"

// Kernel is a kernel image and what was built with it: its modules and its
// configuration, when they can be found.
type Kernel struct {
	// Image is the path of the bzImage.
	Image string
	// Version is the kernel release (uname -r), read from the bzImage header.
	Version string
	// ModulesDir is lib/modules/<Version> of the kernel's package, or "" when
	// the kernel has no modules beside it.
	ModulesDir string
	// Config maps CONFIG_ symbols to their values (y, m, a string); nil when the
	// kernel's configuration is not known.
	Config map[string]string
	// Source says where the kernel came from.
	Source string
}

// OpenKernel finds the kernel at path: a .deb of a linux-image package (unpacked
// into cacheDir the first time), a directory holding an unpacked one (boot/ and
// lib/modules/), or a bzImage file, whose modules and configuration are looked
// for where Debian keeps a running system's (/lib/modules/<version>,
// /boot/config-<version>).
func OpenKernel(ctx context.Context, path, cacheDir string) (*Kernel, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKernel, err)
	}
	switch {
	case st.IsDir():
		return kernelInTree(path, path)
	case strings.HasSuffix(path, ".deb"):
		root, err := unpackDeb(ctx, path, cacheDir)
		if err != nil {
			return nil, err
		}
		return kernelInTree(root, path)
	}
	k := &Kernel{Image: path, Source: path}
	if k.Version, err = bzImageVersion(path); err != nil {
		return nil, err
	}
	for _, d := range []string{"/lib/modules", "/usr/lib/modules"} {
		if dir := filepath.Join(d, k.Version); isDir(dir) {
			k.ModulesDir = dir
			break
		}
	}
	k.Config, _ = readConfig(filepath.Join("/boot", "config-"+k.Version))
	return k, nil
}

// kernelInTree finds the one kernel of an unpacked linux-image package.
func kernelInTree(root, source string) (*Kernel, error) {
	images, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(images) != 1 {
		return nil, fmt.Errorf("%w: %s: want one boot/vmlinuz-*, found %d", ErrKernel, source, len(images))
	}
	k := &Kernel{Image: images[0], Source: source}
	var err error
	if k.Version, err = bzImageVersion(k.Image); err != nil {
		return nil, err
	}
	for _, d := range []string{"lib/modules", "usr/lib/modules"} {
		if dir := filepath.Join(root, d, k.Version); isDir(dir) {
			k.ModulesDir = dir
			break
		}
	}
	k.Config, _ = readConfig(filepath.Join(root, "boot", "config-"+k.Version))
	return k, nil
}

// bzImageVersion reads the kernel release from a bzImage's setup header (the
// boot protocol's kernel_version field), so a kernel names its own modules.
func bzImageVersion(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKernel, err)
	}
	defer f.Close()
	hdr := make([]byte, 0x210)
	if _, err := io.ReadFull(f, hdr); err != nil || string(hdr[0x202:0x206]) != "HdrS" {
		return "", fmt.Errorf("%w: %s is not a bzImage", ErrKernel, path)
	}
	off := int64(binary.LittleEndian.Uint16(hdr[0x20e:])) + 0x200
	s := make([]byte, 256)
	n, _ := f.ReadAt(s, off)
	s = s[:n]
	if i := bytes.IndexAny(s, " \x00"); i > 0 {
		return string(s[:i]), nil
	}
	return "", fmt.Errorf("%w: %s has no version string", ErrKernel, path)
}

// readConfig reads a kernel .config file.
func readConfig(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "CONFIG_") {
			cfg[k] = strings.Trim(v, `"`)
		}
	}
	return cfg, sc.Err()
}

// FetchDebianKernel returns the cached .deb of Debian's cloud kernel, fetching
// it with `apt-get download` into cacheDir the first time: the metapackage
// DebianKernelPackage names the versioned package that holds the kernel. Later
// builds use the cached package without asking apt; delete cacheDir to take a
// newer one.
func FetchDebianKernel(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	debs := filepath.Join(cacheDir, "debs")
	current := filepath.Join(cacheDir, DebianKernelPackage)
	if b, err := os.ReadFile(current); err == nil {
		if deb := filepath.Join(debs, strings.TrimSpace(string(b))); isFile(deb) {
			return deb, nil
		}
	}
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(debs, "fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "fetching %s with apt-get download into %s (once)\n", DebianKernelPackage, cacheDir)
	if err := aptDownload(ctx, tmp, DebianKernelPackage); err != nil {
		return "", err
	}
	meta, _ := filepath.Glob(filepath.Join(tmp, DebianKernelPackage+"_*.deb"))
	if len(meta) != 1 {
		return "", fmt.Errorf("%w: apt-get download %s wrote no package", ErrKernel, DebianKernelPackage)
	}
	out, err := exec.CommandContext(ctx, "dpkg-deb", "--field", meta[0], "Depends").Output()
	if err != nil {
		return "", fmt.Errorf("%w: dpkg-deb --field %s: %v", ErrKernel, meta[0], err)
	}
	// "linux-image-6.1.0-57-cloud-amd64 (= 6.1.192-3)": the versioned package.
	dep := strings.TrimSpace(strings.Split(string(out), ",")[0])
	name, version := dep, ""
	if i := strings.Index(dep, " (= "); i > 0 {
		name, version = dep[:i], strings.TrimSuffix(dep[i+4:], ")")
	}
	pkg := name
	if version != "" {
		pkg += "=" + version
	}
	if err := aptDownload(ctx, tmp, pkg); err != nil {
		return "", err
	}
	got, _ := filepath.Glob(filepath.Join(tmp, name+"_*.deb"))
	if len(got) != 1 {
		return "", fmt.Errorf("%w: apt-get download %s wrote no package", ErrKernel, pkg)
	}
	base := filepath.Base(got[0])
	if err := os.Rename(got[0], filepath.Join(debs, base)); err != nil {
		return "", err
	}
	if err := os.WriteFile(current, []byte(base+"\n"), 0o644); err != nil {
		return "", err
	}
	return filepath.Join(debs, base), nil
}

// aptDownload runs `apt-get download pkg` in dir. Root's apt would drop to the
// _apt user, who may not write dir: download as the caller instead.
func aptDownload(ctx context.Context, dir, pkg string) error {
	cmd := exec.CommandContext(ctx, "apt-get", "-q", "-o", "APT::Sandbox::User=root", "download", pkg)
	if os.Geteuid() != 0 {
		cmd = exec.CommandContext(ctx, "apt-get", "-q", "download", pkg)
	}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: apt-get download %s: %v (no package lists? run apt-get update)\n%s", ErrKernel, pkg, err, out)
	}
	return nil
}

// unpackDeb unpacks a .deb with dpkg-deb into cacheDir (once per package file:
// the directory is named after it) and returns the directory.
func unpackDeb(ctx context.Context, deb, cacheDir string) (string, error) {
	st, err := os.Stat(deb)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKernel, err)
	}
	root := filepath.Join(cacheDir, "unpacked", fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(deb), ".deb"), st.Size()))
	if isDir(root) {
		return root, nil
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(root), "unpack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: dpkg-deb -x %s: %v\n%s", ErrKernel, deb, err, out)
	}
	// The rename makes the unpacked tree appear whole or not at all, so an
	// interrupted build leaves nothing half-unpacked in the cache; when another
	// build unpacked the same package meanwhile, its tree is as good.
	if err := os.Rename(tmp, root); err != nil && !isDir(root) {
		return "", err
	}
	return root, nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

package images

import (
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Cmdline is the kernel command line images boot with, before the ACPI switch
// and BuildOptions.Cmdline. Every parameter is there for a VM that runs one
// program on a serial console:
//   - console=ttyS0: kernel messages and the init's log go to the serial port,
//     which qemu -nographic shows; quiet keeps the kernel's own to warnings, as
//     each byte through the emulated UART costs time under TCG.
//   - panic=-1: a kernel panic (the init dying) reboots at once, and qemu
//     -no-reboot turns that reboot into an exit, so a VM never hangs.
//   - the rest skips work a single-purpose VM has no use for, and that is slow
//     when every instruction is emulated: the crypto self-tests (cryptomgr, and
//     kdf108's, which would also wait for the initramfs to be unpacked), kprobe
//     trace events, mitigation patching, the clocksource watchdog's TSC checks,
//     the PS/2 mouse, more than one UART.
//   - init_on_alloc=0 turns off Debian's hardening default of zeroing every
//     page and slab object the kernel allocates: with one trusted program in
//     the VM it guards nothing, and it zeroed each page of the unpacked
//     initramfs before filling it (0.1-0.3 s of boot under TCG).
//   - noreplace-smp keeps the LOCK prefixes of a kernel built for SMP on our
//     one vCPU: rewriting them, site by site through a temporary mapping, took
//     about 0.1 s of the kernel's 0.3 s of patching itself.
//   - rcupdate.rcu_expedited=1: the kernel's waits for RCU grace periods
//     (module loading, network configuration) end sooner.
//
// A bare word the kernel does not know (nokaslr is one: the decompressor reads
// it, the kernel proper does not) is passed to /init as an argument, ahead of
// "image boot", and hummer would not know what to run: only name=value
// parameters or words the kernel registers belong here.
const Cmdline = "console=ttyS0 quiet panic=-1 cryptomgr.notests initcall_blacklist=crypto_kdf108_init,init_kprobe_trace " +
	"mitigations=off tsc=reliable no_timer_check i8042.noaux 8250.nr_uarts=1 random.trust_cpu=on " +
	"init_on_alloc=0 noreplace-smp rcupdate.rcu_expedited=1"

// noACPI is added to Cmdline unless BuildOptions.ACPI: without ACPI the kernel
// boots about 0.3 s sooner under TCG (no AML interpreter, no ACPI interrupt
// routing for the NIC). The price: no ACPI power button and no power-off, so
// the host stops such a VM with Ctrl-Alt-Del (the kernel signals the init) and
// the init ends it with a reset, which qemu -no-reboot turns into its exit.
const noACPI = "acpi=off"

// BuildOptions say what goes into an image.
type BuildOptions struct {
	// Out is the image directory to write (created if missing).
	Out string
	// Kernel is a .deb of a linux-image package, an unpacked one, or a bzImage
	// (see OpenKernel); "" takes Debian's cloud kernel (FetchDebianKernel).
	Kernel string
	// CacheDir keeps fetched and unpacked kernel packages; "" is DefaultCacheDir.
	CacheDir string
	// Binary is the static hummer binary that becomes /init.
	Binary string
	// Adds are further files or directories to copy into the image.
	Adds []Add
	// Role is the hummer command line the VM runs (default: serve), completed
	// by RoleDefaults.
	Role []string
	// Compression of the initramfs: auto (default), gzip, lz4, zstd, none.
	Compression string
	// ACPI keeps ACPI on: the VM gets a power button (qemu system_powerdown) and
	// powers off for real, and boots slower (see noACPI).
	ACPI bool
	// Cmdline is appended to the kernel command line.
	Cmdline string
	// Log hears about progress; nil discards it.
	Log io.Writer
}

// Add is a file or directory of the host (Src) copied into an image at Dst.
type Add struct{ Src, Dst string }

// ParseAdd reads --add's SRC:DST. A DST ending in / is a directory that
// receives SRC under its own name.
func ParseAdd(s string) (Add, error) {
	i := strings.LastIndex(s, ":")
	if i <= 0 || i == len(s)-1 {
		return Add{}, fmt.Errorf("--add %q: want SRC:DST", s)
	}
	a := Add{Src: s[:i], Dst: s[i+1:]}
	if !path.IsAbs(a.Dst) {
		return Add{}, fmt.Errorf("--add %q: DST must be an absolute path in the image", s)
	}
	if strings.HasSuffix(a.Dst, "/") {
		a.Dst = path.Join(a.Dst, filepath.Base(a.Src))
	}
	return a, nil
}

// DefaultCacheDir is where fetched kernels are kept: the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache) under hummer/kernels.
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "hummer", "kernels")
}

// RoleDefaults completes a role's command line for a VM: its listeners must be
// on the guest's network rather than loopback (qemu forwards host ports to
// 10.0.2.15), its data directory is the image's tmpfs, and a TaskManager's
// JobManager is on the host. Flags given later in role override these (Go's flag
// package keeps the last value).
func RoleDefaults(role []string) []string {
	if len(role) == 0 {
		role = []string{"serve"}
	}
	pg := fmt.Sprintf("0.0.0.0:%d", PGPort)
	var defaults []string
	switch role[0] {
	case "serve":
		defaults = []string{"--pg-addr", pg, "--data-dir", DataDir}
	case "jobmanager":
		defaults = []string{"--pg-addr", pg, "--rpc-addr", "0.0.0.0:6123", "--data-dir", DataDir}
	case "taskmanager":
		defaults = []string{"--jobmanager", Gateway + ":6123", "--data-dir", DataDir}
	}
	return append(append([]string{role[0]}, defaults...), role[1:]...)
}

// binaryHasFlag reports whether `bin role -h` lists the flag.
func binaryHasFlag(ctx context.Context, bin, role, flag string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, role, "-h").CombinedOutput()
	return strings.Contains(string(out), "\n  -"+flag+" ") || strings.Contains(string(out), "\n  -"+flag+"\n")
}

// IsStatic reports whether the ELF binary at path needs no dynamic loader.
func IsStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return f.Machine == elf.EM_X86_64, nil
}

// Build writes an image directory: the kernel, an initramfs holding the static
// hummer binary as /init, the kernel modules the init loads (with their
// dependencies), the added files and the Spec, and the Manifest describing them.
func Build(ctx context.Context, o BuildOptions) (*Manifest, error) {
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if static, err := IsStatic(o.Binary); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Binary, err)
	} else if !static {
		return nil, fmt.Errorf("%s: %w for x86-64 (build it with CGO_ENABLED=0)", o.Binary, ErrNotStatic)
	}
	kpath := o.Kernel
	if kpath == "" {
		deb, err := FetchDebianKernel(ctx, o.CacheDir, logw)
		if err != nil {
			return nil, err
		}
		kpath = deb
	}
	k, err := OpenKernel(ctx, kpath, o.CacheDir)
	if err != nil {
		return nil, err
	}
	warn := func(s string) { fmt.Fprintln(logw, "warning:", s) }
	mods, err := resolveModules(k, o.ACPI, warn)
	if err != nil {
		return nil, err
	}
	comp, err := pickCompression(o.Compression, k.Config)
	if err != nil {
		return nil, err
	}

	spec := Spec{Role: RoleDefaults(o.Role), KernelVersion: k.Version}
	if r := spec.Role[0]; (r == "serve" || r == "jobmanager") && binaryHasFlag(ctx, o.Binary, r, "auth") {
		// The role's PostgreSQL port is on 0.0.0.0 in the VM, where hummer asks
		// for passwords by default; but Run forwards it from the host's
		// 127.0.0.1 only, so clients reach it as they would a loopback port,
		// which hummer trusts. Flags the user gives come later and win.
		spec.Role = slices.Insert(spec.Role, 1, "--auth", "trust")
	}
	fs := newInitramfs()
	for _, d := range []string{"/dev", "/proc", "/sys", "/tmp", "/root", DataDir} {
		fs.mkdirAll(d)
	}
	for _, m := range mods {
		dst := path.Join(moduleDir, k.Version, filepath.ToSlash(m))
		spec.Modules = append(spec.Modules, dst)
		// The modules go in without their signatures: the package they come from
		// was verified when apt fetched it, and checking RSA signatures again at
		// boot costs the emulated kernel 60 ms (it loads them, noting the taint).
		ko, err := os.ReadFile(filepath.Join(k.ModulesDir, m))
		if err != nil {
			return nil, err
		}
		if err := fs.add(fileEntry{name: dst, mode: 0o644, data: stripModuleSignature(ko)}); err != nil {
			return nil, err
		}
	}
	specJSON, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	for _, e := range []fileEntry{
		{name: "/init", mode: 0o755, src: o.Binary},
		{name: specPath, mode: 0o644, data: append(specJSON, '\n')},
		{name: "/etc/hosts", mode: 0o644, data: []byte("127.0.0.1 localhost hummer\n")},
		{name: "/etc/resolv.conf", mode: 0o644, data: []byte("nameserver " + nameserver + "\n")},
		{name: "/etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/init\n")},
		{name: "/etc/group", mode: 0o644, data: []byte("root:x:0:\n")},
	} {
		if err := fs.add(e); err != nil {
			return nil, err
		}
	}
	for _, a := range o.Adds {
		if err := addTree(fs, a); err != nil {
			return nil, err
		}
	}

	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	cmdline := Cmdline
	if !o.ACPI {
		cmdline += " " + noACPI
	}
	m := &Manifest{
		Kernel: KernelFile, KernelVersion: k.Version, KernelSource: k.Source,
		Cmdline: strings.TrimSpace(cmdline + " " + o.Cmdline), ACPI: o.ACPI, Compression: comp, Spec: spec,
	}
	if m.KernelBytes, err = copyFile(k.Image, filepath.Join(o.Out, KernelFile)); err != nil {
		return nil, err
	}
	if st, err := os.Stat(o.Binary); err == nil {
		m.BinaryBytes = st.Size()
	}
	start := time.Now()
	if m.Initramfs, m.InitramfsBytes, err = writeInitramfs(o.Out, fs, comp); err != nil {
		return nil, err
	}
	fmt.Fprintf(logw, "initramfs %s: %.1f MB (%s, %d modules, %.1fs); kernel %s: %.1f MB\n", m.Initramfs,
		float64(m.InitramfsBytes)/1e6, comp, len(mods), time.Since(start).Seconds(), k.Version, float64(m.KernelBytes)/1e6)
	// Start boots a kernel through its PVH entry point when it has one, from
	// its ELF image unpacked into the cache: unpacked now, the image's first
	// boot on this machine does not wait for it (0.1 s for Debian's kernel).
	if elfImage, err := PVHKernel(filepath.Join(o.Out, KernelFile), o.CacheDir); err != nil {
		fmt.Fprintf(logw, "kernel boots as a bzImage: %v\n", err)
	} else {
		fmt.Fprintf(logw, "kernel boots through its PVH entry point, from %s\n", elfImage)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return m, nil
}

// addTree adds a host file, or a directory with everything under it.
func addTree(fs *initramfs, a Add) error {
	st, err := os.Stat(a.Src)
	if err != nil {
		return fmt.Errorf("--add: %w", err)
	}
	if !st.IsDir() {
		return fs.add(fileEntry{name: a.Dst, mode: st.Mode().Perm(), src: a.Src})
	}
	return filepath.WalkDir(a.Src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a.Src, p)
		dst := path.Join(a.Dst, filepath.ToSlash(rel))
		if d.IsDir() {
			fs.mkdirAll(dst)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("--add: %s is neither a file nor a directory", p)
		}
		return fs.add(fileEntry{name: dst, mode: info.Mode().Perm(), src: p})
	})
}

// writeInitramfs writes the archive into dir, compressed, and returns its name
// and size. It goes to a temporary file first so a failed build leaves no
// truncated initramfs under the final name.
func writeInitramfs(dir string, fs *initramfs, comp string) (string, int64, error) {
	tmp, err := os.CreateTemp(dir, ".initramfs-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	z, ext, err := compressor(comp, tmp)
	if err != nil {
		return "", 0, err
	}
	if err := fs.write(z, time.Unix(0, 0)); err != nil {
		return "", 0, err
	}
	if err := z.Close(); err != nil {
		return "", 0, err
	}
	st, err := tmp.Stat()
	if err != nil {
		return "", 0, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return "", 0, err
	}
	if err := tmp.Close(); err != nil {
		return "", 0, err
	}
	name := initramfsBase + ext
	// Drop the initramfs of an earlier build with another compression.
	old, _ := filepath.Glob(filepath.Join(dir, initramfsBase+"*"))
	for _, o := range old {
		os.Remove(o)
	}
	return name, st.Size(), os.Rename(tmp.Name(), filepath.Join(dir, name))
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

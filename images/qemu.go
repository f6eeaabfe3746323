package images

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RunOptions say how to boot an image.
type RunOptions struct {
	// Dir is the image directory Build wrote.
	Dir string
	// PGPort is the host port (on 127.0.0.1) forwarded to the role's PostgreSQL
	// port; 0 forwards none (a TaskManager image).
	PGPort int
	// CPUs and Memory size the VM (qemu -smp, -m: "512M", "2G"); 0 and "" mean
	// 1 and 1G.
	CPUs   int
	Memory string
	// Forwards are further host ports forwarded into the VM.
	Forwards []Forward
	// RoleArgs are appended to the role's arguments at boot (they travel on the
	// kernel command line): what differs between VMs of one image, such as a
	// TaskManager's --data-addr.
	RoleArgs []string
	// Console receives the VM's serial console; nil is os.Stdout.
	Console io.Writer
	// Accel is kvm, tcg or auto (""): KVM when /dev/kvm works, else TCG.
	Accel string
	// QEMU is the emulator binary; "" is qemu-system-x86_64.
	QEMU string
	// CacheDir keeps the uncompressed kernels Start boots through their PVH
	// entry point (PVHKernel); "" is DefaultCacheDir.
	CacheDir string
	// Kernel, when set, is booted instead of the image's bzImage; Start sets it
	// to the image kernel's PVH ELF image when it has one.
	Kernel string
}

// Forward is a host TCP port forwarded to a guest port.
type Forward struct {
	HostAddr  string // default 127.0.0.1
	HostPort  int
	GuestPort int
}

// ParseForward reads --forward's [HOSTADDR:]HOSTPORT:GUESTPORT.
func ParseForward(s string) (Forward, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return Forward{}, fmt.Errorf("--forward %q: want [HOSTADDR:]HOSTPORT:GUESTPORT", s)
	}
	f := Forward{HostAddr: "127.0.0.1"}
	host := s[:i]
	if h, p, err := net.SplitHostPort(host); err == nil {
		f.HostAddr, host = h, p
	}
	var err1, err2 error
	f.HostPort, err1 = strconv.Atoi(host)
	f.GuestPort, err2 = strconv.Atoi(s[i+1:])
	if err1 != nil || err2 != nil || f.HostPort <= 0 || f.GuestPort <= 0 || f.HostPort > 65535 || f.GuestPort > 65535 {
		return Forward{}, fmt.Errorf("--forward %q: want [HOSTADDR:]HOSTPORT:GUESTPORT", s)
	}
	if net.ParseIP(f.HostAddr) == nil {
		return Forward{}, fmt.Errorf("--forward %q: %q is not an IP address", s, f.HostAddr)
	}
	return f, nil
}

// VM is a booted image: a qemu process.
type VM struct {
	// Started is when qemu was launched.
	Started time.Time
	// Accel is the accelerator qemu runs with (kvm or tcg).
	Accel string
	// Kernel is the kernel file qemu boots: the image's bzImage, or its PVH
	// ELF image (PVHKernel).
	Kernel string

	cmd    *exec.Cmd
	acpi   bool // the guest has ACPI (a power button)
	qmpDir string
	done   chan struct{}
	err    error // once done is closed

	mu         sync.Mutex
	roleFailed string // the init's report, if the role failed
	poweredOff bool   // the init said it powers off
}

// QEMUArgs returns the qemu command line that boots the image of m as o says,
// with accel and a QMP socket at qmp ("" for none).
func QEMUArgs(m *Manifest, o RunOptions, accel, qmp string) ([]string, error) {
	cpus, mem := o.CPUs, o.Memory
	if cpus <= 0 {
		cpus = 1
	}
	if mem == "" {
		mem = "1G"
	}
	netdev := "user,id=n0"
	fwds := o.Forwards
	if o.PGPort > 0 {
		fwds = append([]Forward{{HostAddr: "127.0.0.1", HostPort: o.PGPort, GuestPort: rolePGPort(m.Role)}}, fwds...)
	}
	for _, f := range fwds {
		netdev += fmt.Sprintf(",hostfwd=tcp:%s:%d-:%d", f.HostAddr, f.HostPort, f.GuestPort)
	}
	kernel := o.Kernel
	if kernel == "" {
		kernel = filepath.Join(o.Dir, m.Kernel)
	}
	initArgs, err := kernelInitArgs(o.RoleArgs)
	if err != nil {
		return nil, err
	}
	args := []string{
		// No default devices (VGA, floppy, IDE, a NIC with its option ROM): the
		// fewer devices, the less firmware and kernel probing.
		"-nodefaults", "-nographic", "-serial", "stdio",
		"-M", "pc", "-accel", accel, "-smp", strconv.Itoa(cpus), "-m", mem,
		// A guest that resets, as one without ACPI does to end itself and any
		// does when its kernel panics (panic=-1), makes qemu exit like a
		// power-off: no VM ever boots twice.
		"-no-reboot",
		"-kernel", kernel, "-initrd", filepath.Join(o.Dir, m.Initramfs),
		"-append", m.Cmdline + " -- image boot" + initArgs,
		"-netdev", netdev,
		// romfile= spares the firmware loading iPXE: the kernel is given directly.
		"-device", "virtio-net-pci,netdev=n0,romfile=",
	}
	if accel == "kvm" {
		args = append(args, "-cpu", "host")
	} else {
		// TCG's default CPU lacks RDRAND, so the kernel's random pool would
		// take a second of emulated jitter to seed, and the engine's first
		// crypto/rand read would wait for it; with RDRAND (random.trust_cpu=on)
		// it is ready at boot.
		args = append(args, "-cpu", "qemu64,+rdrand")
	}
	if m.ACPI {
		// qemu's ACPI tables otherwise describe PCI hotplug for every slot,
		// and the kernel's AML interpreter reads all of it at boot (0.2 s
		// under TCG); an image's devices are fixed. The HPET would only
		// replace the PIT as the timer the kernel barely uses.
		args = append(args, "-global", "PIIX4_PM.acpi-pci-hotplug-with-bridge-support=off",
			"-global", "PIIX4_PM.acpi-root-pci-hotplug=off", "-no-hpet")
	}
	if qmp != "" {
		args = append(args, "-qmp", "unix:"+qmp+",server=on,wait=off")
	}
	return args, nil
}

// kernelInitArgs quotes role arguments for the kernel command line, which
// passes the words after "--" to the init (split at spaces, double quotes
// grouping, no escapes).
func kernelInitArgs(args []string) (string, error) {
	var b strings.Builder
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, "\"\n\r\t\x00") {
			return "", fmt.Errorf("role argument %q cannot travel on the kernel command line", a)
		}
		if strings.Contains(a, " ") {
			a = `"` + a + `"`
		}
		b.WriteString(" " + a)
	}
	return b.String(), nil
}

// rolePGPort is the guest port of the role's PostgreSQL server: its last
// --pg-addr, else PGPort.
func rolePGPort(role []string) int {
	port := PGPort
	for i, a := range role {
		var v string
		switch {
		case a == "--pg-addr" || a == "-pg-addr":
			if i+1 < len(role) {
				v = role[i+1]
			}
		case strings.HasPrefix(a, "--pg-addr=") || strings.HasPrefix(a, "-pg-addr="):
			_, v, _ = strings.Cut(a, "=")
		default:
			continue
		}
		if _, p, err := net.SplitHostPort(v); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				port = n
			}
		}
	}
	return port
}

// KVMWorks reports whether KVM can run a VM here: the CPU has hardware
// virtualisation (vmx or svm) and /dev/kvm creates a VM. The CPU check is not
// redundant: inside some VMs /dev/kvm exists and creates VMs whose vCPUs then
// fail (this machine's does: qemu aborts setting an MSR, or hangs in the kernel).
func KVMWorks() bool {
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	hw := false
	for _, line := range strings.Split(string(cpuinfo), "\n") {
		if strings.HasPrefix(line, "flags") {
			for _, f := range strings.Fields(line) {
				hw = hw || f == "vmx" || f == "svm"
			}
			break
		}
	}
	if !hw {
		return false
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	const kvmGetAPIVersion, kvmCreateVM = 0xAE00, 0xAE01
	v, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), kvmGetAPIVersion, 0)
	if errno != 0 || v != 12 {
		return false
	}
	vm, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), kvmCreateVM, 0)
	if errno != 0 {
		return false
	}
	syscall.Close(int(vm))
	return true
}

// Start boots the image and returns once qemu runs.
func Start(o RunOptions) (*VM, error) {
	m, err := ReadManifest(o.Dir)
	if err != nil {
		return nil, err
	}
	accel := o.Accel
	if accel == "" || accel == "auto" {
		accel = "tcg"
		if KVMWorks() {
			accel = "kvm"
		}
	}
	qemu := o.QEMU
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	if o.Kernel == "" {
		cache := o.CacheDir
		if cache == "" {
			cache = DefaultCacheDir()
		}
		// Without a PVH entry point, or without a cache to unpack it to, the
		// bzImage boots as it would anywhere, only slower.
		o.Kernel = filepath.Join(o.Dir, m.Kernel)
		if k, err := PVHKernel(o.Kernel, cache); err == nil {
			o.Kernel = k
		}
	}
	// A unix socket's path must be short: not under the image directory.
	qmpDir, err := os.MkdirTemp("", "hummer-qmp-")
	if err != nil {
		return nil, err
	}
	args, err := QEMUArgs(m, o, accel, filepath.Join(qmpDir, "qmp.sock"))
	if err != nil {
		os.RemoveAll(qmpDir)
		return nil, err
	}
	if accel == "tcg" {
		// qemu asks for transparent huge pages for the guest's memory. Under
		// TCG they buy nothing (the emulated TLB maps 4 KiB pages) and cost
		// much: each first touch of a 2 MiB page zeroes all of it, and a
		// booting kernel touches memory sparsely. Without them qemu spent
		// 0.3 s less system time per boot here, and the guest reached its init
		// 0.1-0.2 s sooner. The setting is the calling process's, and qemu
		// inherits it; refused (kernels before 3.15), it only costs that time.
		unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0)
	}
	v := &VM{Accel: accel, Kernel: o.Kernel, acpi: m.ACPI, qmpDir: qmpDir, done: make(chan struct{})}
	console := o.Console
	if console == nil {
		console = os.Stdout
	}
	pr, pw := io.Pipe()
	v.cmd = exec.Command(qemu, args...)
	v.cmd.Stdout, v.cmd.Stderr = pw, pw
	// Its own process group keeps a terminal's Ctrl-C from killing qemu before the
	// guest could power off; the death signal keeps it from outliving its caller.
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	v.Started = time.Now()
	if err := v.cmd.Start(); err != nil {
		os.RemoveAll(qmpDir)
		return nil, fmt.Errorf("%s: %w", qemu, err)
	}
	scanned := make(chan struct{})
	go func() {
		v.scanConsole(pr, console)
		close(scanned)
	}()
	go func() {
		err := v.cmd.Wait()
		pw.Close()
		<-scanned
		os.RemoveAll(qmpDir)
		v.mu.Lock()
		switch {
		case err != nil:
			v.err = fmt.Errorf("qemu: %w", err)
		case v.roleFailed != "":
			v.err = fmt.Errorf("%w: %s", ErrRoleFailed, v.roleFailed)
		}
		v.mu.Unlock()
		close(v.done)
	}()
	return v, nil
}

// scanConsole copies the console to w and notes what the init reports.
func (v *VM) scanConsole(r io.Reader, w io.Writer) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			w.Write([]byte(line))
			if strings.Contains(line, "component=init") {
				v.mu.Lock()
				if strings.Contains(line, `msg="`+msgRoleFailed+`"`) {
					v.roleFailed = strings.TrimSpace(line)
				}
				if strings.Contains(line, "msg=\""+msgPowerOff+"\"") || strings.Contains(line, "msg="+msgPowerOff) {
					v.poweredOff = true
				}
				v.mu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}

// Done is closed when qemu has exited.
func (v *VM) Done() <-chan struct{} { return v.done }

// Wait waits for qemu to exit. It returns nil when the guest powered off with
// its role ended cleanly, ErrRoleFailed when the role failed.
func (v *VM) Wait() error {
	<-v.done
	return v.err
}

// PoweredOff reports whether the init announced it was powering the VM off (so
// qemu's exit was the guest's doing, not a kill).
func (v *VM) PoweredOff() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.poweredOff
}

// Shutdown asks the guest to stop, as a host stopping a VM would: it presses
// the ACPI power button (QMP system_powerdown) of an image built with ACPI, and
// Ctrl-Alt-Del (QMP send-key) of one without. Either way the init stops the role
// and ends the VM. When qemu is still running after timeout, it is killed.
func (v *VM) Shutdown(timeout time.Duration) error {
	select {
	case <-v.done:
		return v.Wait()
	default:
	}
	cmd := `{"execute":"system_powerdown"}`
	if !v.acpi {
		cmd = `{"execute":"send-key","arguments":{"keys":[` +
			`{"type":"qcode","data":"ctrl"},{"type":"qcode","data":"alt"},{"type":"qcode","data":"delete"}]}}`
	}
	err := qmpCommand(filepath.Join(v.qmpDir, "qmp.sock"), cmd)
	if err == nil {
		select {
		case <-v.done:
			return v.Wait()
		case <-time.After(timeout):
			err = fmt.Errorf("the VM did not power off within %s", timeout)
		}
	}
	v.Kill()
	v.Wait()
	return err
}

// Kill ends qemu at once.
func (v *VM) Kill() {
	if v.cmd.Process != nil {
		v.cmd.Process.Kill()
	}
}

// qmpCommand runs one command (a JSON object) on a QMP socket: the greeting,
// capability negotiation, then the command, each answered before the next.
func qmpCommand(sock, command string) error {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return fmt.Errorf("qmp: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	dec := json.NewDecoder(c)
	// Replies may be preceded by events; read until the one that answers.
	await := func() error {
		for {
			var msg map[string]json.RawMessage
			if err := dec.Decode(&msg); err != nil {
				return fmt.Errorf("qmp: %w", err)
			}
			if e, ok := msg["error"]; ok {
				return fmt.Errorf("qmp %s: %s", command, e)
			}
			if _, ok := msg["return"]; ok {
				return nil
			}
			if _, ok := msg["QMP"]; ok {
				return nil
			}
		}
	}
	if err := await(); err != nil {
		return err
	}
	for _, cmd := range []string{`{"execute":"qmp_capabilities"}`, command} {
		if _, err := fmt.Fprintln(c, cmd); err != nil {
			return fmt.Errorf("qmp: %w", err)
		}
		if err := await(); err != nil {
			return err
		}
	}
	return nil
}

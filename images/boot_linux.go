package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Messages of the init that Run reads on the console.
const (
	msgRoleFailed = "role failed"
	msgPowerOff   = "powering off"
)

// StopTimeout is how long the init gives the role to end after a stop request
// (the ACPI power button, Ctrl-Alt-Del, SIGTERM) before it powers off anyway.
const StopTimeout = 10 * time.Second

// RoleFunc runs a hummer role (serve, jobmanager, taskmanager: role[0]) with
// its flags (role[1:]) until it ends. It must return when the process gets
// SIGTERM or SIGINT, as hummer's roles do.
type RoleFunc func(role []string) error

// Boot is the VM's init: hummer runs it when the kernel starts it as PID 1
// (the image's kernel command line ends in "-- image boot", so the kernel passes
// those words to /init). It mounts /proc, /sys, /dev and a tmpfs at DataDir,
// loads the modules the image's Spec names, brings up the network of qemu's user
// networking, logs to the serial console, and runs the role in this process,
// with extra appended to the role's arguments. The role runs in PID 1 itself
// rather than in a child: under TCG, starting a second Go runtime of a 40 MB
// binary costs a tenth of the boot.
//
// A press of the ACPI power button (qemu system_powerdown) becomes a SIGTERM to
// the role, as does Ctrl-Alt-Del (the kernel sends the init SIGINT); if the role
// has not ended StopTimeout later the VM powers off regardless. When the role
// returns, or panics, the VM powers off. Boot returns only ErrNotPID1, in any
// process but the VM's init. A panic on another goroutine ends PID 1, and so
// panics the kernel, which reboots (panic=-1) into qemu's -no-reboot exit: no
// path leaves the VM hanging.
func Boot(extra []string, run RoleFunc) error {
	if os.Getpid() != 1 {
		return ErrNotPID1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	defer func() {
		if r := recover(); r != nil {
			log.Error(msgRoleFailed, "panic", r, "stack", string(debug.Stack()))
		}
		powerOff(log)
	}()
	// The kernel gives the init no console when the initramfs has no
	// /dev/console, and the cpio writer cannot make device nodes: mount devtmpfs
	// first and take the console from it.
	consoleErr := mountDev()
	if consoleErr == nil {
		consoleErr = takeConsole()
	}
	log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{ReplaceAttr: uptimeAttr})).With("component", "init")
	if consoleErr != nil {
		log.Error("no console", "err", consoleErr)
	}
	role, err := boot(log, extra)
	if err != nil {
		log.Error(msgRoleFailed, "err", err)
		return nil
	}
	log.Info("role starting")
	if err := run(role); err != nil {
		log.Error(msgRoleFailed, "err", err)
	} else {
		log.Info("role ended")
	}
	return nil
}

// uptimeAttr logs time as seconds since the kernel started (what the bench
// reads to split a boot into its stages), not as a wall clock the VM does not
// know.
func uptimeAttr(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
		return slog.String("uptime", fmt.Sprintf("%.3f", float64(ts.Nano())/1e9))
	}
	return a
}

// boot prepares the VM for the role and returns the role's command line.
func boot(log *slog.Logger, extra []string) ([]string, error) {
	for _, m := range []struct{ fs, dir string }{{"proc", "/proc"}, {"sysfs", "/sys"}, {"tmpfs", "/tmp"}, {"tmpfs", DataDir}} {
		if err := mount(m.fs, m.dir, unix.MS_NOSUID|unix.MS_NODEV); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(specPath)
	if err != nil {
		return nil, err
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", specPath, err)
	}
	role := append(append([]string(nil), spec.Role...), extra...)
	log.Info("hummer image booting", "kernel", spec.KernelVersion, "role", strings.Join(role, " "))
	unix.Sethostname([]byte("hummer"))

	// Ctrl-Alt-Del then signals the init (SIGINT) instead of rebooting at once.
	unix.Reboot(unix.LINUX_REBOOT_CMD_CAD_OFF)
	go stopWatchdog(log)

	start := time.Now()
	for _, m := range spec.Modules {
		if err := loadModule(m); err != nil {
			return nil, err
		}
	}
	log.Info("modules loaded", "n", len(spec.Modules), "took", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	aliases := loopbackAliases(role)
	if err := configureNetwork(aliases); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	log.Info("network up", "addr", GuestAddr, "gateway", Gateway, "loopback-aliases", strings.Join(aliases, ","),
		"took", time.Since(start).Round(time.Millisecond))
	for _, a := range aliases {
		if err := proxyAlias(log, a); err != nil {
			return nil, err
		}
	}
	go watchPowerButton(log)
	if kernelParam("hummer.dmesg") {
		dumpKernelLog()
	}
	return role, nil
}

// kernelParam reports whether the kernel command line has the parameter
// name (alone or as name=...).
func kernelParam(name string) bool {
	b, _ := os.ReadFile("/proc/cmdline")
	for _, f := range strings.Fields(string(b)) {
		if f == "--" {
			return false
		}
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

// dumpKernelLog copies the kernel's log buffer to the console: with quiet, the
// kernel keeps its messages (initcall_debug's timings among them) there rather
// than spend emulated time printing them, and an image has no dmesg to read them
// with. hummer.dmesg on the kernel command line asks for it.
func dumpKernelLog() {
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	if err != nil || n <= 0 {
		return
	}
	buf := make([]byte, n)
	if n, err = unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf); err == nil {
		os.Stderr.Write(buf[:n])
	}
}

// mount mounts a pseudo file system, creating its directory.
func mount(fstype, dir string, flags uintptr) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(fstype, dir, fstype, flags, ""); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, dir, err)
	}
	return nil
}

// mountDev mounts devtmpfs at /dev (the kernel makes the nodes of the devices
// it finds, /dev/input/event* among them) or, on a kernel without it, a tmpfs
// with the few nodes a Go program touches.
func mountDev() error {
	if err := mount("devtmpfs", "/dev", unix.MS_NOSUID); err == nil {
		return nil
	}
	if err := mount("tmpfs", "/dev", unix.MS_NOSUID); err != nil {
		return err
	}
	for _, n := range []struct {
		name         string
		major, minor uint32
	}{{"console", 5, 1}, {"null", 1, 3}, {"zero", 1, 5}, {"random", 1, 8}, {"urandom", 1, 9}} {
		if err := unix.Mknod("/dev/"+n.name, unix.S_IFCHR|0o666, int(unix.Mkdev(n.major, n.minor))); err != nil {
			return err
		}
	}
	return nil
}

// takeConsole makes /dev/console (the serial port: console=ttyS0) the init's
// standard input, output and error, which the role inherits.
func takeConsole() error {
	fd, err := unix.Open("/dev/console", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/console: %w", err)
	}
	for i := 0; i <= 2; i++ {
		if err := unix.Dup3(fd, i, 0); err != nil {
			return err
		}
	}
	return unix.Close(fd)
}

// loadModule loads a kernel module file; one the kernel has already is fine.
// A compressed module is handed over as it is, for a kernel that decompresses
// modules itself.
func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	flags := 0
	if !strings.HasSuffix(path, ".ko") {
		flags |= unix.MODULE_INIT_COMPRESSED_FILE
	}
	if err := unix.FinitModule(int(f.Fd()), "", flags); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("load module %s: %w", filepath.Base(path), err)
	}
	return nil
}

// stopWatchdog powers the VM off StopTimeout after the first stop request
// (SIGTERM, SIGINT), in case the role does not end. The role hears the same
// signals (os/signal gives each to every channel notified of it).
func stopWatchdog(log *slog.Logger) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM)
	s := <-sigs
	log.Info("stopping the role", "signal", s.String())
	time.Sleep(StopTimeout)
	log.Error("the role did not stop", "after", StopTimeout)
	powerOff(log)
}

// powerOff ends the VM. With ACPI the kernel powers the machine off and qemu
// exits. Without ACPI (acpi=off) the kernel cannot power off, so the VM resets
// instead, which qemu -no-reboot turns into the same exit.
func powerOff(log *slog.Logger) {
	how := unix.LINUX_REBOOT_CMD_POWER_OFF
	if _, err := os.Stat("/sys/firmware/acpi"); err != nil {
		how = unix.LINUX_REBOOT_CMD_RESTART
	}
	log.Info(msgPowerOff)
	unix.Sync()
	err := unix.Reboot(how)
	// Only a failed reboot(2) gets here; PID 1's exit panics the kernel, which
	// ends the VM all the same (panic=-1, -no-reboot).
	log.Error("power off failed", "err", err)
	os.Exit(1)
}

// watchPowerButton waits for the ACPI power button's input device (the button
// and evdev modules make it) and turns a press into a SIGTERM to this process.
func watchPowerButton(log *slog.Logger) {
	if _, err := os.Stat("/sys/firmware/acpi"); err != nil {
		return // acpi=off: no button; Ctrl-Alt-Del stops the VM
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var dev string
	for dev == "" {
		names, _ := filepath.Glob("/sys/class/input/event*/device/name")
		for _, n := range names {
			if b, err := os.ReadFile(n); err == nil && strings.TrimSpace(string(b)) == "Power Button" {
				dev = "/dev/input/" + filepath.Base(filepath.Dir(filepath.Dir(n)))
			}
		}
		if dev != "" {
			break
		}
		select {
		case <-ctx.Done():
			log.Warn("no ACPI power button: stop the VM with Ctrl-Alt-Del")
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	f, err := openWhenThere(ctx, dev)
	if err != nil {
		log.Warn("cannot read the power button", "dev", dev, "err", err)
		return
	}
	defer f.Close()
	// struct input_event on 64-bit Linux: a timeval (16 bytes), then type
	// (u16), code (u16) and value (s32).
	const evKey, keyPower = 1, 116
	ev := make([]byte, 24)
	for {
		if _, err := f.Read(ev); err != nil {
			log.Warn("power button", "err", err)
			return
		}
		typ := uint16(ev[16]) | uint16(ev[17])<<8
		code := uint16(ev[18]) | uint16(ev[19])<<8
		if typ == evKey && code == keyPower && ev[20] == 1 {
			log.Info("ACPI power button pressed")
			unix.Kill(os.Getpid(), unix.SIGTERM)
		}
	}
}

// openWhenThere opens a device node devtmpfs may not have made yet.
func openWhenThere(ctx context.Context, dev string) (*os.File, error) {
	for {
		f, err := os.Open(dev)
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

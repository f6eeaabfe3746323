package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The VM tests boot real images with qemu (CI installs qemu-system-x86 from
// Debian's packages) under TCG, as this machine has no usable KVM. The kernel is
// Debian's cloud kernel, fetched with apt-get download into the user's cache the
// first time (images.DefaultCacheDir).

// TestImageWordCount builds an image with the King James Bible inside and a
// serve role that declares a docs table over it, boots it, and drives the
// README's WordCount (both spellings) through the forwarded port with the real
// psql, comparing every count with a Go word count. Then it stops `hummer image
// run` as a user would (SIGTERM): the guest must end its role and power off, and
// qemu exit cleanly.
func TestImageWordCount(t *testing.T) {
	bin := buildStaticHummer(t)
	kjv, err := filepath.Abs("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "img")
	buildImage(t, bin, "--out", img, "--add", kjv+":/data/kjv.txt", "--",
		"serve", "--init", "CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file:///data/kjv.txt'")
	for _, f := range []string{"vmlinuz", "image.json"} {
		if _, err := os.Stat(filepath.Join(img, f)); err != nil {
			t.Fatal(err)
		}
	}

	addr := freeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	vm := startVM(t, bin, img, "--pg-port", port)
	vm.waitFor(t, "hummer is ready", 2*time.Minute)
	// Debian's kernel has a PVH entry point and an lz4 payload: it must boot
	// from its ELF image (images.PVHKernel), not through the emulated
	// decompressor of the bzImage.
	if !regexp.MustCompile(`booting .*kernel \S*/pvh/[0-9a-f]+\.vmlinux\)`).MatchString(vm.log()) {
		t.Errorf("the VM did not boot its kernel through the PVH entry point:\n%s", vm.log())
	}

	text, err := os.ReadFile(kjv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	t.Run("string_split", func(t *testing.T) {
		want := map[string]int{}
		for _, line := range lines {
			for _, w := range strings.Split(strings.ToLower(line), " ") {
				if w != "" {
					want[w]++
				}
			}
		}
		checkCounts(t, psql(t, addr, `SELECT word, COUNT(*) AS n
			FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t
			WHERE word <> '' GROUP BY word`), want)
	})
	t.Run("regexp_split_to_table", func(t *testing.T) {
		want := map[string]int{}
		for _, line := range lines {
			for _, w := range strings.Fields(strings.ToLower(line)) {
				want[w]++
			}
		}
		checkCounts(t, psql(t, addr, `SELECT word, COUNT(*) AS n
			FROM (SELECT regexp_split_to_table(lower(line), '[[:space:]]+') AS word FROM docs) AS t
			WHERE word <> '' GROUP BY word`), want)
	})

	if err := vm.stop(time.Minute); err != nil {
		t.Fatalf("hummer image run after SIGTERM: %v\n%s", err, vm.log())
	}
	for _, want := range []string{`msg="role ended"`, `msg="powering off"`} {
		if !strings.Contains(vm.log(), want) {
			t.Errorf("the console lacks %s:\n%s", want, vm.log())
		}
	}
}

// TestImageACPIPowerOff boots an image built with ACPI, which the host stops by
// pressing its ACPI power button (QMP system_powerdown) rather than with
// Ctrl-Alt-Del: the init must hear the button, stop the role and power off.
func TestImageACPIPowerOff(t *testing.T) {
	bin := buildStaticHummer(t)
	img := filepath.Join(t.TempDir(), "img")
	buildImage(t, bin, "--out", img, "--acpi")
	addr := freeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	vm := startVM(t, bin, img, "--pg-port", port)
	vm.waitFor(t, "hummer is ready", 2*time.Minute)
	// The button's input device appears a moment after the role starts.
	vm.waitFor(t, `msg="role starting"`, time.Minute)
	if got := strings.TrimSpace(psql(t, addr, "SELECT 40 + 2")); got != "42" {
		t.Errorf("SELECT 40 + 2 = %q", got)
	}
	if err := vm.stop(time.Minute); err != nil {
		t.Fatalf("hummer image run after SIGTERM: %v\n%s", err, vm.log())
	}
	for _, want := range []string{`msg="ACPI power button pressed"`, `msg="role ended"`, `msg="powering off"`, "reboot: Power down"} {
		if !strings.Contains(vm.log(), want) {
			t.Errorf("the console lacks %s:\n%s", want, vm.log())
		}
	}
}

// TestImageCluster runs a JobManager on the host and two TaskManagers in VMs of
// one image, which join it at 10.0.2.2 (the host's loopback as qemu's user
// networking shows it to a guest). Each VM's TaskManager listens on its own
// loopback alias, forwarded from the same address on the host, so the other VM
// reaches it there (see images.loopbackAliases): a WordCount at parallelism 2
// runs its tasks on both VMs, shuffles words between them, and must match the Go
// word count.
func TestImageCluster(t *testing.T) {
	bin := buildStaticHummer(t)
	kjv, err := filepath.Abs("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	pgAddr, rpcAddr := freeAddr(t), freeAddr(t)
	_, rpcPort, _ := strings.Cut(rpcAddr, ":")
	jm := startProcess(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr,
		"--data-dir", filepath.Join(t.TempDir(), "jm"))

	img := filepath.Join(t.TempDir(), "tm")
	buildImage(t, bin, "--out", img, "--add", kjv+":/data/kjv.txt", "--",
		"taskmanager", "--jobmanager", "10.0.2.2:"+rpcPort, "--slots", "1")
	_, dataPort, _ := strings.Cut(freeAddr(t), ":")
	var vms []*vmProcess
	for _, alias := range []string{"127.0.0.11", "127.0.0.12"} {
		data := alias + ":" + dataPort
		vms = append(vms, startVM(t, bin, img, "--forward", data+":"+dataPort, "--", "--data-addr", data))
	}
	waitUntil(t, "two TaskManagers in VMs", jm, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 2;")
		return err == nil && !strings.Contains(out, "ERROR")
	})

	text, err := os.ReadFile(kjv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		for _, w := range strings.Split(strings.ToLower(line), " ") {
			if w != "" {
				want[w]++
			}
		}
	}
	// The file is in the images; the JobManager only plans over it.
	psql(t, pgAddr, "CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file:///data/kjv.txt'")
	query := `SELECT word, COUNT(*) AS n
		FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t
		WHERE word <> '' GROUP BY word`
	checkCounts(t, psql(t, pgAddr, "SET parallelism = 2;\n"+query+";"), want)

	// EXPLAIN ANALYZE says where each task ran and what it sent over the
	// network: the hash exchange crosses from one VM to the other.
	analyzed := psql(t, pgAddr, "SET parallelism = 2;\nEXPLAIN ANALYZE "+query+";")
	ran := map[string]bool{}
	var netBytes int64
	for _, f := range strings.Fields(analyzed) {
		if tm, ok := strings.CutPrefix(f, "tm="); ok {
			ran[tm] = true
		}
		if v, ok := strings.CutPrefix(f, "net_bytes_out="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			netBytes += n
		}
	}
	if netBytes == 0 {
		t.Errorf("no bytes crossed between the VMs:\n%s", analyzed)
	}
	for _, alias := range []string{"127.0.0.11", "127.0.0.12"} {
		if !ran[alias+":"+dataPort] {
			t.Errorf("no task ran on the VM at %s:%s:\n%s", alias, dataPort, analyzed)
		}
	}
	for _, vm := range vms {
		if err := vm.stop(time.Minute); err != nil {
			t.Errorf("hummer image run after SIGTERM: %v\n%s", err, vm.log())
		}
	}
}

// buildStaticHummer builds hummer as an image needs it: static (cgo off) and
// stripped. Each test builds its own (after the first, the build cache makes it
// a second's work) in its temporary directory, which goes with it.
func buildStaticHummer(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Fatal("qemu-system-x86_64 is not installed (CI installs qemu-system-x86)")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	bin := filepath.Join(t.TempDir(), "hummer")
	if out, err := staticBuild(context.Background(), ".", ".", bin).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// buildImage runs `hummer image build` with args.
func buildImage(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"image", "build"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hummer image build: %v\n%s", err, out)
	}
}

// vmProcess is a running `hummer image run`.
type vmProcess struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	err    error // once exited is closed
}

// startVM runs `hummer image run dir args...` until the test ends (then it is
// stopped as a user would, and killed if that fails).
func startVM(t *testing.T, bin, dir string, args ...string) *vmProcess {
	t.Helper()
	vm := &vmProcess{out: &syncBuffer{}, exited: make(chan struct{})}
	vm.cmd = exec.Command(bin, append([]string{"image", "run", dir}, args...)...)
	vm.cmd.Stdout, vm.cmd.Stderr = vm.out, vm.out
	if err := vm.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		vm.err = vm.cmd.Wait()
		close(vm.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-vm.exited:
		default:
			if err := vm.stop(time.Minute); err != nil {
				t.Errorf("stopping the VM: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("hummer image run %s console:\n%s", strings.Join(args, " "), vm.log())
		}
	})
	return vm
}

// waitFor waits until the console shows s, failing the test if the VM exits or
// the timeout passes first.
func (vm *vmProcess) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(vm.log(), s) {
		select {
		case <-vm.exited:
			t.Fatalf("the VM exited (%v) before its console showed %q:\n%s", vm.err, s, vm.log())
		case <-deadline:
			t.Fatalf("the console did not show %q within %s:\n%s", s, timeout, vm.log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends `hummer image run` SIGTERM, which asks the guest to power off, and
// waits for it to exit: its error is the run's (nil when the guest ended its
// role cleanly and powered off). After timeout it kills the process.
func (vm *vmProcess) stop(timeout time.Duration) error {
	vm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-vm.exited:
		return vm.err
	case <-time.After(timeout):
		vm.cmd.Process.Kill()
		<-vm.exited
		return fmt.Errorf("still running %s after SIGTERM: killed", timeout)
	}
}

func (vm *vmProcess) log() string { return vm.out.String() }

// syncBuffer is a bytes.Buffer safe for a process's output and a test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

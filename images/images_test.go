package images

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cavaliergopher/cpio"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

func TestParseAdd(t *testing.T) {
	for _, tc := range []struct {
		in       string
		src, dst string
		bad      bool
	}{
		{in: "data/kjv.txt:/data/kjv.txt", src: "data/kjv.txt", dst: "/data/kjv.txt"},
		{in: "data/kjv.txt:/data/", src: "data/kjv.txt", dst: "/data/kjv.txt"},
		{in: "a:b:/x", src: "a:b", dst: "/x"},
		{in: "data/kjv.txt:data", bad: true},
		{in: "data/kjv.txt", bad: true},
		{in: ":/x", bad: true},
	} {
		a, err := ParseAdd(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseAdd(%q) = %+v, want an error", tc.in, a)
			}
			continue
		}
		if err != nil || a.Src != tc.src || a.Dst != tc.dst {
			t.Errorf("ParseAdd(%q) = %+v, %v; want %s -> %s", tc.in, a, err, tc.src, tc.dst)
		}
	}
}

func TestParseForward(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Forward
		bad  bool
	}{
		{in: "5432:4566", want: Forward{HostAddr: "127.0.0.1", HostPort: 5432, GuestPort: 4566}},
		{in: "127.0.0.11:7000:7000", want: Forward{HostAddr: "127.0.0.11", HostPort: 7000, GuestPort: 7000}},
		{in: "0.0.0.0:80:8080", want: Forward{HostAddr: "0.0.0.0", HostPort: 80, GuestPort: 8080}},
		{in: "7000", bad: true},
		{in: "x:7000", bad: true},
		{in: "localhost:1:2", bad: true},
		{in: "70000:1", bad: true},
	} {
		f, err := ParseForward(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseForward(%q) = %+v, want an error", tc.in, f)
			}
			continue
		}
		if err != nil || f != tc.want {
			t.Errorf("ParseForward(%q) = %+v, %v; want %+v", tc.in, f, err, tc.want)
		}
	}
}

func TestRoleDefaults(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, []string{"serve", "--pg-addr", "0.0.0.0:4566", "--data-dir", DataDir}},
		{[]string{"serve", "--init", "SELECT 1"}, []string{"serve", "--pg-addr", "0.0.0.0:4566", "--data-dir", DataDir, "--init", "SELECT 1"}},
		{[]string{"taskmanager", "--slots", "1"}, []string{"taskmanager", "--jobmanager", "10.0.2.2:6123", "--data-dir", DataDir, "--slots", "1"}},
		{[]string{"jobmanager"}, []string{"jobmanager", "--pg-addr", "0.0.0.0:4566", "--rpc-addr", "0.0.0.0:6123", "--data-dir", DataDir}},
	} {
		if got := RoleDefaults(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("RoleDefaults(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRolePGPort(t *testing.T) {
	for _, tc := range []struct {
		role []string
		want int
	}{
		{[]string{"serve"}, PGPort},
		{[]string{"serve", "--pg-addr", "0.0.0.0:4566", "--pg-addr", "0.0.0.0:5432"}, 5432},
		{[]string{"serve", "--pg-addr=0.0.0.0:6000"}, 6000},
	} {
		if got := rolePGPort(tc.role); got != tc.want {
			t.Errorf("rolePGPort(%q) = %d, want %d", tc.role, got, tc.want)
		}
	}
}

func TestLoopbackAliases(t *testing.T) {
	role := []string{"taskmanager", "--jobmanager", "10.0.2.2:6123", "--data-addr", "127.0.0.1:0",
		"--data-addr", "127.0.0.11:7000", "--network", "batch=127.0.0.21:7001", "--network=x=10.0.0.1:1",
		"--data-addr=127.0.0.12:7002", "--slots", "1"}
	want := []string{"127.0.0.11:7000", "127.0.0.21:7001", "127.0.0.12:7002"}
	if got := loopbackAliases(role); !slices.Equal(got, want) {
		t.Errorf("loopbackAliases = %q, want %q", got, want)
	}
	if got := aliasHosts([]string{"127.0.0.11:7000", "127.0.0.11:7001", "127.0.0.12:1"}); !slices.Equal(got, []string{"127.0.0.11", "127.0.0.12"}) {
		t.Errorf("aliasHosts = %q", got)
	}
}

func TestKernelInitArgs(t *testing.T) {
	got, err := kernelInitArgs([]string{"--data-addr", "127.0.0.11:7000", "--init", "SELECT 1"})
	if err != nil || got != ` --data-addr 127.0.0.11:7000 --init "SELECT 1"` {
		t.Errorf("kernelInitArgs = %q, %v", got, err)
	}
	for _, bad := range []string{`say "hi"`, "a\nb", ""} {
		if _, err := kernelInitArgs([]string{bad}); err == nil {
			t.Errorf("kernelInitArgs(%q) should fail", bad)
		}
	}
}

func TestQEMUArgs(t *testing.T) {
	m := &Manifest{Kernel: "vmlinuz", Initramfs: "initramfs.cpio.lz4", Cmdline: "console=ttyS0 quiet",
		Spec: Spec{Role: []string{"serve", "--pg-addr", "0.0.0.0:4566"}}}
	o := RunOptions{Dir: "/img", PGPort: 15432, CPUs: 2, Memory: "2G",
		Forwards: []Forward{{HostAddr: "127.0.0.11", HostPort: 7000, GuestPort: 7000}}, RoleArgs: []string{"--slots", "2"}}
	args, err := QEMUArgs(m, o, "tcg", "/tmp/q.sock")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{
		"-nographic", "-no-reboot", "-accel tcg", "-smp 2", "-m 2G", "-kernel /img/vmlinuz", "-initrd /img/initramfs.cpio.lz4",
		"-append console=ttyS0 quiet -- image boot --slots 2",
		"-netdev user,id=n0,hostfwd=tcp:127.0.0.1:15432-:4566,hostfwd=tcp:127.0.0.11:7000-:7000",
		"-device virtio-net-pci,netdev=n0", "-qmp unix:/tmp/q.sock,server=on,wait=off", "-cpu qemu64,+rdrand",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("qemu args lack %q:\n%s", want, line)
		}
	}
	// Only an image with ACPI has PCI hotplug to describe, or an HPET to drop.
	if strings.Contains(line, "PIIX4_PM") || strings.Contains(line, "-no-hpet") {
		t.Errorf("qemu args of an image without ACPI set ACPI devices:\n%s", line)
	}
	m.ACPI = true
	if args, err = QEMUArgs(m, o, "tcg", ""); err != nil {
		t.Fatal(err)
	}
	line = strings.Join(args, " ")
	for _, want := range []string{"-global PIIX4_PM.acpi-root-pci-hotplug=off", "-global PIIX4_PM.acpi-pci-hotplug-with-bridge-support=off", "-no-hpet"} {
		if !strings.Contains(line, want) {
			t.Errorf("qemu args of an image with ACPI lack %q:\n%s", want, line)
		}
	}
}

// TestResolveModules checks the load order against a modules.dep and against
// each module's own modinfo, in a fake kernel package.
func TestResolveModules(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{ // module -> its depends=
		"kernel/drivers/virtio/virtio_ring.ko":           "",
		"kernel/drivers/virtio/virtio.ko":                "virtio_ring",
		"kernel/drivers/virtio/virtio_pci_modern_dev.ko": "",
		"kernel/drivers/virtio/virtio_pci.ko":            "virtio_pci_modern_dev,virtio_ring,virtio",
		"kernel/net/core/failover.ko":                    "",
		"kernel/drivers/net/net_failover.ko":             "failover",
		"kernel/drivers/net/virtio_net.ko":               "net_failover,virtio_ring,virtio",
		"kernel/drivers/input/evdev.ko":                  "",
		"kernel/drivers/acpi/button.ko":                  "",
	}
	for name, deps := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, fakeModule(deps), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := &Kernel{Version: "6.1.0-test", ModulesDir: dir, Config: map[string]string{}}
	check := func(acpi bool) {
		t.Helper()
		order, err := resolveModules(k, acpi, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		for i, m := range order {
			pos[modName(m)] = i
		}
		n := 7
		if acpi {
			n = 9
		}
		if len(order) != n {
			t.Fatalf("acpi=%v: %d modules, want %d: %q", acpi, len(order), n, order)
		}
		for name, deps := range files {
			for _, d := range strings.Split(deps, ",") {
				if d != "" && pos[d] > pos[modName(name)] {
					t.Errorf("%s loads before its dependency %s: %q", modName(name), d, order)
				}
			}
		}
	}
	check(false)
	check(true)

	// modules.dep, when there is one, is what counts.
	dep := "kernel/drivers/net/virtio_net.ko: kernel/drivers/virtio/virtio.ko\nkernel/drivers/virtio/virtio.ko:\n" +
		"kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio.ko\n"
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644); err != nil {
		t.Fatal(err)
	}
	order, err := resolveModules(k, false, func(string) {})
	want := []string{"kernel/drivers/virtio/virtio.ko", "kernel/drivers/virtio/virtio_pci.ko", "kernel/drivers/net/virtio_net.ko"}
	if err != nil || !slices.Equal(order, want) {
		t.Errorf("with modules.dep: %q, %v; want %q", order, err, want)
	}

	// Built in: nothing to load.
	if err := os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte("kernel/drivers/virtio/virtio.ko\n"+
		"kernel/drivers/virtio/virtio_pci.ko\nkernel/drivers/net/virtio_net.ko\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if order, err := resolveModules(k, false, func(string) {}); err != nil || len(order) != 0 {
		t.Errorf("all built in: %q, %v", order, err)
	}
}

// fakeModule is a minimal ELF relocatable file with a .modinfo section, which is
// all resolveModules reads of a module.
func fakeModule(depends string) []byte {
	modinfo := []byte("license=GPL\x00depends=" + depends + "\x00name=x\x00")
	shstrtab := []byte("\x00.modinfo\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	modinfoOff := ehsize
	shstrOff := modinfoOff + len(modinfo)
	shOff := (shstrOff + len(shstrtab) + 7) &^ 7
	var b bytes.Buffer
	le := binary.LittleEndian
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0})
	b.Write(make([]byte, 8))
	binary.Write(&b, le, uint16(1))  // ET_REL
	binary.Write(&b, le, uint16(62)) // EM_X86_64
	binary.Write(&b, le, uint32(1))
	binary.Write(&b, le, uint64(0)) // entry
	binary.Write(&b, le, uint64(0)) // phoff
	binary.Write(&b, le, uint64(shOff))
	binary.Write(&b, le, uint32(0))
	binary.Write(&b, le, uint16(ehsize))
	binary.Write(&b, le, uint16(0))
	binary.Write(&b, le, uint16(0))
	binary.Write(&b, le, uint16(shentsize))
	binary.Write(&b, le, uint16(3)) // shnum
	binary.Write(&b, le, uint16(2)) // shstrndx
	b.Write(modinfo)
	b.Write(shstrtab)
	b.Write(make([]byte, shOff-b.Len()))
	section := func(name, typ uint32, off, size int) {
		binary.Write(&b, le, name)
		binary.Write(&b, le, typ)
		binary.Write(&b, le, uint64(0)) // flags
		binary.Write(&b, le, uint64(0)) // addr
		binary.Write(&b, le, uint64(off))
		binary.Write(&b, le, uint64(size))
		binary.Write(&b, le, uint32(0))
		binary.Write(&b, le, uint32(0))
		binary.Write(&b, le, uint64(1))
		binary.Write(&b, le, uint64(0))
	}
	section(0, 0, 0, 0)
	section(1, 1, modinfoOff, len(modinfo)) // .modinfo, PROGBITS
	section(10, 3, shstrOff, len(shstrtab)) // .shstrtab, STRTAB
	return b.Bytes()
}

func TestStripModuleSignature(t *testing.T) {
	body := []byte("\x7fELF module body")
	sig := bytes.Repeat([]byte{0xAB}, 512)
	info := []byte{0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0} // PKEY_ID_PKCS7, sig_len 512
	signed := slices.Concat(body, sig, info, []byte(moduleSigMagic))
	if got := stripModuleSignature(signed); !bytes.Equal(got, body) {
		t.Errorf("stripped = %q, want %q", got, body)
	}
	if got := stripModuleSignature(body); !bytes.Equal(got, body) {
		t.Errorf("an unsigned module changed: %q", got)
	}
}

func TestBzImageVersion(t *testing.T) {
	img := make([]byte, 0x400)
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x20e:], 0x100) // the string is at 0x100 + 0x200
	copy(img[0x300:], "6.1.0-57-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP\x00")
	p := filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := bzImageVersion(p); err != nil || v != "6.1.0-57-cloud-amd64" {
		t.Errorf("bzImageVersion = %q, %v", v, err)
	}
	os.WriteFile(p, make([]byte, 0x400), 0o644)
	if _, err := bzImageVersion(p); err == nil {
		t.Error("a file without a setup header is not a bzImage")
	}
}

func TestPickCompression(t *testing.T) {
	cfg := map[string]string{"CONFIG_RD_GZIP": "y", "CONFIG_RD_LZ4": "y"}
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want string
		bad  bool
	}{
		{"auto", cfg, "lz4", false},
		{"auto", map[string]string{"CONFIG_RD_GZIP": "y"}, "gzip", false},
		{"auto", nil, "none", false},
		{"zstd", cfg, "", true},
		{"zstd", nil, "zstd", false},
		{"none", cfg, "none", false},
		{"xz", cfg, "", true},
	} {
		got, err := pickCompression(tc.name, tc.cfg)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("pickCompression(%q, %v) = %q, %v", tc.name, tc.cfg, got, err)
		}
	}
}

// TestInitramfs writes an archive in each compression and reads it back: the
// directories before their files, the files' modes and contents.
func TestInitramfs(t *testing.T) {
	src := filepath.Join(t.TempDir(), "kjv.txt")
	if err := os.WriteFile(src, []byte("In the beginning\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := newInitramfs()
	fs.mkdirAll("/proc")
	for _, e := range []fileEntry{
		{name: "/init", mode: 0o755, data: []byte("#!binary")},
		{name: "/data/kjv.txt", mode: 0o644, src: src},
		{name: "/etc/hummer/image.json", mode: 0o644, data: []byte("{}")},
	} {
		if err := fs.add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.add(fileEntry{name: "/etc", mode: 0o644, data: []byte("x")}); err == nil {
		t.Error("a file over a directory should fail")
	}
	readers := map[string]func(io.Reader) (io.Reader, error){
		"none": func(r io.Reader) (io.Reader, error) { return r, nil },
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"lz4":  func(r io.Reader) (io.Reader, error) { return lz4.NewReader(r), nil },
		"zstd": func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) },
	}
	for comp, open := range readers {
		var buf bytes.Buffer
		z, _, err := compressor(comp, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.write(z, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := open(&buf)
		if err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		cr := cpio.NewReader(r)
		var names []string
		contents := map[string]string{}
		for {
			h, err := cr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", comp, err)
			}
			names = append(names, h.Name)
			if h.Mode.IsRegular() {
				b, _ := io.ReadAll(cr)
				contents[h.Name] = string(b)
				if h.Name == "init" && h.Mode.Perm() != 0o755 {
					t.Errorf("%s: /init mode %v", comp, h.Mode)
				}
			}
		}
		want := []string{"data", "data/kjv.txt", "etc", "etc/hummer", "etc/hummer/image.json", "init", "proc"}
		if !slices.Equal(names, want) {
			t.Errorf("%s: entries %q, want %q", comp, names, want)
		}
		if contents["data/kjv.txt"] != "In the beginning\n" || contents["init"] != "#!binary" {
			t.Errorf("%s: contents %q", comp, contents)
		}
	}
}

func TestIsStatic(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := IsStatic(self); err != nil {
		t.Fatal(err)
	}
	if _, err := IsStatic("/etc/hostname"); err == nil {
		t.Error("a text file is no ELF binary")
	}
	if static, err := IsStatic("/bin/sh"); err == nil && static {
		t.Error("/bin/sh is dynamically linked on Debian")
	}
}

package images

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// wantModule is a kernel module the init loads when the kernel has it as a
// module rather than built in.
type wantModule struct {
	name   string // as modprobe names it
	config string // the CONFIG_ symbol that builds it
	// optional modules only add something (the ACPI power button, so a host can
	// ask the VM to power off): an image is still built without them.
	optional bool
}

// wantModules are the modules of the virtio network (virtio_pci finds the
// device, virtio_net drives it) and of the ACPI power button the init listens to
// (button raises it as an input event, evdev lets the init read it).
var wantModules = []wantModule{
	{name: "virtio", config: "CONFIG_VIRTIO"},
	{name: "virtio_pci", config: "CONFIG_VIRTIO_PCI"},
	{name: "virtio_net", config: "CONFIG_VIRTIO_NET"},
	{name: "evdev", config: "CONFIG_INPUT_EVDEV", optional: true},
	{name: "button", config: "CONFIG_ACPI_BUTTON", optional: true},
}

// moduleIndex is what a kernel's lib/modules/<version> holds.
type moduleIndex struct {
	dir     string
	files   map[string]string   // module name -> path relative to dir
	deps    map[string][]string // from modules.dep, when the package has one
	builtin map[string]bool     // from modules.builtin
}

// modName is a module's name as the kernel knows it: dashes and underscores are
// the same, and the file's extensions go.
func modName(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, ".ko"); i > 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

func readModuleIndex(dir string) (*moduleIndex, error) {
	ix := &moduleIndex{dir: dir, files: map[string]string{}, builtin: map[string]bool{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(d.Name(), ".ko") {
			rel, _ := filepath.Rel(dir, path)
			ix.files[modName(rel)] = rel
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKernel, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, line := range strings.Fields(string(b)) {
			ix.builtin[modName(line)] = true
		}
	}
	// Debian's packages leave modules.dep to depmod at install time, so an
	// unpacked package has none: then each module's own modinfo says what it
	// depends on (modpost writes it; depmod would compute the same from symbols).
	if b, err := os.ReadFile(filepath.Join(dir, "modules.dep")); err == nil {
		ix.deps = parseModulesDep(string(b))
	}
	return ix, nil
}

// parseModulesDep reads depmod's modules.dep ("kernel/a.ko: kernel/b.ko kernel/c.ko").
func parseModulesDep(s string) map[string][]string {
	deps := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var names []string
		for _, d := range strings.Fields(rest) {
			names = append(names, modName(d))
		}
		deps[modName(mod)] = names
	}
	return deps
}

// depends returns the modules a module needs loaded before it.
func (ix *moduleIndex) depends(name string) ([]string, error) {
	if ix.deps != nil {
		return ix.deps[name], nil
	}
	rel := ix.files[name]
	if !strings.HasSuffix(rel, ".ko") {
		return nil, fmt.Errorf("%w: %s is compressed and the kernel package has no modules.dep", ErrKernel, rel)
	}
	f, err := elf.Open(filepath.Join(ix.dir, rel))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKernel, rel, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("%w: %s has no .modinfo", ErrKernel, rel)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKernel, rel, err)
	}
	return modinfoDepends(data), nil
}

// modinfoDepends reads the "depends=a,b" entry of a module's .modinfo section
// (NUL-separated key=value strings).
func modinfoDepends(modinfo []byte) []string {
	for _, kv := range bytes.Split(modinfo, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var names []string
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					names = append(names, modName(d))
				}
			}
			return names
		}
	}
	return nil
}

// resolveModules returns the files of the modules the init must load for k, each
// after its dependencies, as paths relative to k.ModulesDir; the power button's
// only with acpi. warn hears about what the image will lack.
func resolveModules(k *Kernel, acpi bool, warn func(string)) ([]string, error) {
	want := wantModules
	if !acpi {
		want = nil
		for _, m := range wantModules {
			if !m.optional {
				want = append(want, m)
			}
		}
	}
	builtIn := func(m wantModule) bool { return k.Config[m.config] == "y" }
	if k.ModulesDir == "" {
		for _, m := range want {
			if !builtIn(m) && !m.optional {
				warn(fmt.Sprintf("kernel %s has no modules directory: assuming %s is built in", k.Version, m.name))
			}
		}
		return nil, nil
	}
	ix, err := readModuleIndex(k.ModulesDir)
	if err != nil {
		return nil, err
	}
	var order []string
	seen := map[string]bool{}
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		if seen[name] || ix.builtin[name] {
			return nil
		}
		for _, p := range path {
			if p == name {
				return fmt.Errorf("%w: modules depend on each other in a cycle: %s", ErrKernel, strings.Join(append(path, name), " -> "))
			}
		}
		rel, ok := ix.files[name]
		if !ok {
			return fmt.Errorf("%w: module %s (needed by %s) is not in %s", ErrKernel, name, strings.Join(path, " -> "), ix.dir)
		}
		deps, err := ix.depends(name)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, append(path, name)); err != nil {
				return err
			}
		}
		seen[name] = true
		order = append(order, rel)
		return nil
	}
	for _, m := range want {
		if builtIn(m) || ix.builtin[m.name] {
			continue
		}
		if _, ok := ix.files[m.name]; !ok {
			if m.optional {
				warn(fmt.Sprintf("kernel %s lacks module %s: the VM will not hear the ACPI power button", k.Version, m.name))
				continue
			}
			if k.Config == nil {
				warn(fmt.Sprintf("kernel %s has no module %s and no known config: assuming it is built in", k.Version, m.name))
				continue
			}
		}
		if err := visit(m.name, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// moduleSigMagic ends a signed module: the signature and a struct
// module_signature (12 bytes, the signature's length last, big-endian) precede it.
const moduleSigMagic = "~Module signature appended~\n"

// stripModuleSignature returns a module without its appended signature.
func stripModuleSignature(ko []byte) []byte {
	if !bytes.HasSuffix(ko, []byte(moduleSigMagic)) || len(ko) < len(moduleSigMagic)+12 {
		return ko
	}
	info := ko[len(ko)-len(moduleSigMagic)-12 : len(ko)-len(moduleSigMagic)]
	sigLen := int(info[8])<<24 | int(info[9])<<16 | int(info[10])<<8 | int(info[11])
	n := len(ko) - len(moduleSigMagic) - 12 - sigLen - int(info[3]) - int(info[4])
	if n <= 0 {
		return ko
	}
	return ko[:n]
}

// Package images builds and boots Hummer's single-purpose VM image: a stock
// Linux kernel plus an initramfs whose only program is the static hummer binary,
// running as PID 1 (the "Linux in unikernel clothing" of Lupine Linux, since the
// paper's unikernel toolchain cannot be had here). There is no shell, no init
// system and no service in the image: the init in this package mounts what the
// engine needs, loads the kernel modules of the virtio network, configures it,
// runs one role (serve, jobmanager or taskmanager) and powers the VM off when
// the role ends.
//
// The three halves are Build (the host writes an image directory), Boot (PID 1
// inside the VM) and Run (the host boots an image with qemu).
package images

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Files of an image directory, as Build writes them and Run reads them.
const (
	KernelFile    = "vmlinuz"
	ManifestFile  = "image.json"
	initramfsBase = "initramfs.cpio" // plus the compression's extension
)

// Paths inside the image.
const (
	// specPath is where Boot finds what Build decided (the Spec, as JSON).
	specPath = "/etc/hummer/image.json"
	// DataDir is the tmpfs the role keeps its catalog and state in: an image is
	// stateless, everything written there goes when the VM does.
	DataDir = "/var/lib/hummer"
	// moduleDir holds the kernel modules, under their names in the kernel
	// package (kernel/drivers/net/virtio_net.ko...).
	moduleDir = "/lib/modules"
)

// The network of qemu's user-mode networking (slirp), which is what Run gives
// a VM: the guest is 10.0.2.15/24, the host's loopback is reachable as 10.0.2.2,
// and qemu's DNS forwarder is 10.0.2.3.
const (
	GuestAddr  = "10.0.2.15/24"
	Gateway    = "10.0.2.2"
	nameserver = "10.0.2.3"
)

// PGPort is the guest port the PostgreSQL wire server of a serve or jobmanager
// role listens on, unless the role's --pg-addr says otherwise.
const PGPort = 4566

// Spec is what the init needs to know at boot, decided when the image is built
// and stored in it as JSON.
type Spec struct {
	// Role is the hummer command line the init runs, without the program name:
	// ["serve", "--pg-addr", "0.0.0.0:4566", ...].
	Role []string `json:"role"`
	// Modules are the kernel modules to load, as paths inside the image, each
	// after the modules it depends on.
	Modules []string `json:"modules"`
	// KernelVersion names the kernel the modules were built for (uname -r).
	KernelVersion string `json:"kernel_version,omitempty"`
}

// Manifest describes an image directory: its files, the kernel command line it
// boots with, and what is in it. Build writes it; Run reads it.
type Manifest struct {
	Kernel        string `json:"kernel"`
	Initramfs     string `json:"initramfs"`
	KernelVersion string `json:"kernel_version,omitempty"`
	// KernelSource says where the kernel came from (a .deb, a file).
	KernelSource string `json:"kernel_source,omitempty"`
	// Cmdline is the kernel command line, without the arguments for the init.
	Cmdline string `json:"cmdline"`
	// ACPI says the VM has ACPI: it stops on the power button (qemu
	// system_powerdown) rather than on Ctrl-Alt-Del.
	ACPI bool `json:"acpi"`
	// Compression is the initramfs's: gzip, lz4, zstd or none.
	Compression string `json:"compression"`
	Spec
	// Bytes are the sizes of the kernel, the initramfs and the static hummer
	// binary inside it (uncompressed).
	KernelBytes    int64 `json:"kernel_bytes"`
	InitramfsBytes int64 `json:"initramfs_bytes"`
	BinaryBytes    int64 `json:"binary_bytes"`
}

// Size is the image's size on disk: kernel plus initramfs.
func (m *Manifest) Size() int64 { return m.KernelBytes + m.InitramfsBytes }

// ReadManifest reads the manifest of the image directory dir.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAnImage, err)
	}
	m := new(Manifest)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotAnImage, ManifestFile, err)
	}
	return m, nil
}

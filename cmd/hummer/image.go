package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hummer-db/hummer/images"
	"github.com/hummer-db/hummer/images/oci"
)

const imageUsage = `Usage:
  hummer image build --out DIR [--kernel PATH] [--add SRC:DST ...] [--hummer BIN] [--compress auto|gzip|lz4|zstd|none]
                     [--acpi] [--cmdline PARAMS] [-- ROLE ARGS...]
  hummer image run DIR [--pg-port PORT] [--cpus N] [--memory SIZE] [--forward [HOSTADDR:]HOSTPORT:GUESTPORT ...]
                   [--accel auto|kvm|tcg] [-- ROLE ARGS...]
  hummer image boot            (the VM's init: what the kernel runs as PID 1)
  hummer image oci --out DIR|FILE.tar [--push REGISTRY/REPO:TAG] [--tag REPO:TAG] [--hummer BIN]
                   [--ca-certs FILE] [--version V]

ROLE is serve (the default), jobmanager or taskmanager with their flags; build
completes it for a VM (listeners on 0.0.0.0, --data-dir on the image's tmpfs, a
TaskManager's JobManager on the host at 10.0.2.2:6123). Arguments after run's
-- are appended to the role at boot, e.g. a TaskManager's --data-addr.

oci writes a container image (an OCI layout directory, or a tarball that docker
load and podman load read) whose entrypoint is hummer: its arguments are the
role, e.g. "jobmanager --pg-addr=0.0.0.0:4566 --rpc-addr=0.0.0.0:6123"; with none
it serves on 0.0.0.0:4566. It runs as user hummer (uid 65532) in /var/lib/hummer.
`

// image dispatches `hummer image build|run|boot`.
func image(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, imageUsage)
		os.Exit(2)
	}
	switch args[0] {
	case "build":
		return imageBuild(args[1:])
	case "run":
		return imageRun(args[1:])
	case "boot":
		return images.Boot(args[1:], runImageRole)
	case "oci":
		return imageOCI(args[1:])
	case "help", "-h", "--help":
		fmt.Print(imageUsage)
		return nil
	}
	return fmt.Errorf("image: unknown command %q\n\n%s", args[0], imageUsage)
}

// runImageRole runs the role of an image in the VM's init (images.Boot).
func runImageRole(role []string) error {
	switch role[0] {
	case "serve":
		return serve(role[1:])
	case "jobmanager":
		return jobManager(role[1:])
	case "taskmanager":
		return taskManager(role[1:])
	}
	return fmt.Errorf("image: unknown role %q", role[0])
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func imageBuild(args []string) error {
	fs := flag.NewFlagSet("image build", flag.ExitOnError)
	out := fs.String("out", "", "image directory to write")
	kernel := fs.String("kernel", "", "a linux-image .deb, an unpacked one, or a bzImage (default: Debian's "+
		images.DebianKernelPackage+", fetched with apt-get download once)")
	bin := fs.String("hummer", "", "the static hummer binary to boot (default: this one if static, else built with CGO_ENABLED=0)")
	compress := fs.String("compress", "auto", "initramfs compression: auto, gzip, lz4, zstd, none")
	cache := fs.String("cache", images.DefaultCacheDir(), "where fetched and unpacked kernels are kept")
	cmdline := fs.String("cmdline", "", "more kernel parameters: name=value, or words the kernel knows "+
		"(an unknown bare word reaches /init as an argument and stops the boot)")
	acpi := fs.Bool("acpi", false, "keep ACPI: a power button and a real power-off, for about 0.3 s more boot under TCG")
	var adds repeated
	fs.Var(&adds, "add", "SRC:DST: copy a host file or directory into the image (repeatable)")
	fs.Parse(args)
	if *out == "" {
		return errors.New("image build: --out is required")
	}
	o := images.BuildOptions{Out: *out, Kernel: *kernel, CacheDir: *cache, Role: fs.Args(),
		Compression: *compress, Cmdline: *cmdline, ACPI: *acpi, Log: os.Stderr}
	for _, a := range adds {
		add, err := images.ParseAdd(a)
		if err != nil {
			return err
		}
		o.Adds = append(o.Adds, add)
	}
	if len(o.Role) > 0 && o.Role[0] != "serve" && o.Role[0] != "jobmanager" && o.Role[0] != "taskmanager" {
		return fmt.Errorf("image build: role %q: want serve, jobmanager or taskmanager", o.Role[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	binary, cleanup, err := staticHummer(ctx, *bin)
	if err != nil {
		return err
	}
	defer cleanup()
	o.Binary = binary
	m, err := images.Build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "image %s: %.1f MB (kernel %.1f MB + initramfs %.1f MB), role: %s\n", *out,
		float64(m.Size())/1e6, float64(m.KernelBytes)/1e6, float64(m.InitramfsBytes)/1e6, strings.Join(m.Role, " "))
	return nil
}

// imageOCI writes the container image of the static binary (images/oci).
func imageOCI(args []string) error {
	fs := flag.NewFlagSet("image oci", flag.ExitOnError)
	out := fs.String("out", "", "an OCI image layout directory to write, or FILE.tar (docker load, podman load)")
	push := fs.String("push", "", "REGISTRY/REPO:TAG to push the image to (credentials of docker login)")
	tag := fs.String("tag", "hummer:latest", "the image's name in the layout or tarball")
	bin := fs.String("hummer", "", "the static hummer binary (default: this one if static, else built with CGO_ENABLED=0)")
	certs := fs.String("ca-certs", oci.CACerts, "the CA certificates to put in the image")
	version := fs.String("version", "", "the org.opencontainers.image.version label (default: the binary's module version)")
	fs.Parse(args)
	if *out == "" && *push == "" {
		return errors.New("image oci: give --out, --push or both")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	binary, cleanup, err := staticHummer(ctx, *bin)
	if err != nil {
		return err
	}
	defer cleanup()
	img, err := oci.Image(oci.Options{Binary: binary, CACerts: *certs, Version: *version})
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if *out != "" {
		if err := oci.Write(img, *out, *tag); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "image %s: %s %s\n", *out, *tag, digest)
	}
	if *push != "" {
		if _, err := oci.Push(img, *push); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pushed %s@%s\n", *push, digest)
	}
	return nil
}

// buildTags are the Makefile's build tags (see GOFLAGS there): the binary an
// image boots should be the smallest that does the job.
const buildTags = "grpcnotrace,arrow_json_stdlib"

// staticHummer returns the hummer binary to put in an image: bin if given,
// else this executable when it is statically linked, else one built from the
// source tree the current directory is in, with cgo off; and what removes the
// one it built.
func staticHummer(ctx context.Context, bin string) (string, func(), error) {
	nothing := func() {}
	if bin != "" {
		return bin, nothing, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", nothing, err
	}
	if static, err := images.IsStatic(self); err == nil && static {
		return self, nothing, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", nothing, fmt.Errorf("image build: %s is dynamically linked and %v: give --hummer a binary built with CGO_ENABLED=0", self, err)
	}
	dir, err := os.MkdirTemp("", "hummer-image-")
	if err != nil {
		return "", nothing, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	out := filepath.Join(dir, "hummer")
	fmt.Fprintf(os.Stderr, "building a static hummer (CGO_ENABLED=0) from %s\n", root)
	cmd := staticBuild(ctx, root, "./cmd/hummer", out)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nothing, fmt.Errorf("image build: go build: %w", err)
	}
	return out, cleanup, nil
}

// staticBuild is the go build of an image's hummer: package pkg of the tree at
// dir into out, with cgo off (static), the build tags and no symbols.
func staticBuild(ctx context.Context, dir, pkg, out string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", buildTags, "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// moduleRoot finds the hummer source tree at or above the current directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(b), "module github.com/hummer-db/hummer\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no hummer source tree here")
		}
		dir = parent
	}
}

func imageRun(args []string) error {
	fs := flag.NewFlagSet("image run", flag.ExitOnError)
	pgPort := fs.Int("pg-port", 0, "host port on 127.0.0.1 forwarded to the role's PostgreSQL port (0: none)")
	cpus := fs.Int("cpus", 1, "virtual CPUs")
	memory := fs.String("memory", "1G", "memory of the VM")
	accel := fs.String("accel", "auto", "kvm, tcg, or auto (KVM when /dev/kvm works)")
	stopTimeout := fs.Duration("stop-timeout", 30*time.Second, "how long the VM may take to power off once asked")
	var fwds repeated
	fs.Var(&fwds, "forward", "[HOSTADDR:]HOSTPORT:GUESTPORT: forward a further host TCP port (repeatable)")
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	fs.Parse(args)
	rest := fs.Args()
	if dir == "" && len(rest) > 0 && rest[0] != "--" {
		dir, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if dir == "" {
		return errors.New("image run: give the image directory")
	}
	o := images.RunOptions{Dir: dir, PGPort: *pgPort, CPUs: *cpus, Memory: *memory, Accel: *accel, RoleArgs: rest}
	for _, f := range fwds {
		fw, err := images.ParseForward(f)
		if err != nil {
			return err
		}
		o.Forwards = append(o.Forwards, fw)
	}
	vm, err := images.Start(o)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("hummer image run: booting %s (%s, %d CPU, %s, kernel %s)", dir, vm.Accel, *cpus, *memory, vm.Kernel)
	if *pgPort > 0 {
		msg += fmt.Sprintf("; psql -h 127.0.0.1 -p %d -U hummer", *pgPort)
	}
	fmt.Fprintln(os.Stderr, msg+"; Ctrl-C powers it off")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	select {
	case <-vm.Done():
		return vm.Wait()
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "hummer image run: %v: powering the VM off\n", s)
		return vm.Shutdown(*stopTimeout)
	}
}

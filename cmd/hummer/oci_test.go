package main

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/hummer-db/hummer/images/oci"
)

// TestOCIImage builds the container image with `hummer image oci` from the
// static binary the VM images boot, twice (the same digest), unpacks its
// layers into a directory and runs the entrypoint with the image's arguments
// there (chrooted, as the image's user) until the real psql gets an answer
// from it and its catalog is in the image's data directory. Its config's entrypoint, user and labels
// are the image's contract with a cluster manager.
func TestOCIImage(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	bin := filepath.Join(t.TempDir(), "hummer")
	if out, err := staticBuild(context.Background(), ".", ".", bin).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dirs := []string{filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "two")}
	for _, dir := range dirs {
		if out, err := exec.Command(bin, "image", "oci", "--out", dir, "--tag", "hummer:test").CombinedOutput(); err != nil {
			t.Fatalf("hummer image oci: %v\n%s", err, out)
		}
	}
	img0, img1 := layoutImage(t, dirs[0]), layoutImage(t, dirs[1])
	d0, _ := img0.Digest()
	d1, _ := img1.Digest()
	if d0 != d1 {
		t.Errorf("the same binary built twice: %s and %s", d0, d1)
	}
	tarFile := filepath.Join(t.TempDir(), "hummer.tar")
	if out, err := exec.Command(bin, "image", "oci", "--out", tarFile).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), d0.String()) {
		t.Errorf("hummer image oci --out %s: %v\n%s\nwant it to name %s", tarFile, err, out, d0)
	}

	// --push, to go-containerregistry's in-process registry: pulled back by
	// its tag, the same image.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/hummer:test"
	if out, err := exec.Command(bin, "image", "oci", "--push", ref).CombinedOutput(); err != nil {
		t.Errorf("hummer image oci --push %s: %v\n%s", ref, err, out)
	} else if r, err := name.ParseReference(ref); err != nil {
		t.Error(err)
	} else if pulled, err := remote.Image(r); err != nil {
		t.Errorf("pulling %s: %v", ref, err)
	} else if d, _ := pulled.Digest(); d != d0 {
		t.Errorf("pulled %s back as %s, built %s", ref, d, d0)
	}

	cf, err := img0.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/usr/local/bin/hummer" || c.User != "65532:65532" || len(c.Cmd) == 0 || c.Cmd[0] != "serve" {
		t.Errorf("config: entrypoint %q, cmd %q, user %q", c.Entrypoint, c.Cmd, c.User)
	}
	// The revision label is the commit go build stamped into the binary, as
	// go version -m reads it (none where the tree's VCS was not found).
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var revision string
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[1], "vcs.revision=") {
			revision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if got := c.Labels["org.opencontainers.image.revision"]; got != revision {
		t.Errorf("org.opencontainers.image.revision = %q, want the binary's %q", got, revision)
	}
	if c.Labels["org.opencontainers.image.title"] != "hummer" || c.Labels["org.opencontainers.image.created"] == "" {
		t.Errorf("labels: %v", c.Labels)
	}

	root := t.TempDir()
	unpack(t, img0, root)
	host, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatal(err)
	}
	if certs, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")); err != nil || string(certs) != string(host) {
		t.Errorf("the image's CA certificates are not the host's: %v", err)
	}
	// As a container runtime runs it: the entrypoint with the image's
	// arguments, environment, working directory and user, in the unpacked
	// root (chroot); the listeners on loopback, as later flags say. Without
	// root (CI has it) the binary runs as a plain process instead.
	addr := freeAddr(t)
	args := append(slices.Clone(c.Cmd), "--pg-addr="+addr, "--http-addr="+freeAddr(t))
	cmd := exec.Command(c.Entrypoint[0], args...)
	cmd.Env, cmd.Dir = c.Env, c.WorkingDir
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: oci.UID, Gid: oci.GID}}
	} else {
		t.Log("not root: running the image's binary as a plain process, not in a chroot as its user")
		cmd.Path = filepath.Join(root, c.Entrypoint[0])
		cmd.Dir = filepath.Join(root, c.WorkingDir)
		cmd.Args = append(cmd.Args, "--data-dir="+cmd.Dir)
	}
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the image's hummer:\n%s", logs.String())
		}
	}()
	waitUntil(t, "the image's PostgreSQL port", exited, func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	if out := psql(t, addr, "SELECT 40 + 2 AS answer;"); strings.TrimSpace(out) != "42" {
		t.Errorf("psql against the image's hummer: %q, want 42", out)
	}
	// The catalog went into the image's data directory, written by its user.
	entries, err := os.ReadDir(filepath.Join(root, c.WorkingDir))
	if err != nil || len(entries) == 0 {
		t.Fatalf("the data directory after start-up: %v, %v", entries, err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && st.Uid != oci.UID {
			t.Errorf("%s in the data directory belongs to uid %d, want the image's user %d", e.Name(), st.Uid, oci.UID)
		}
	}
}

func layoutImage(t *testing.T, dir string) v1.Image {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%s holds %d images, want 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// unpack writes the image's flattened layers under root, as a container
// runtime lays out a root filesystem.
func unpack(t *testing.T, img v1.Image, root string) {
	t.Helper()
	r := mutate.Extract(img)
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("layer entry %q leaves the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, os.FileMode(h.Mode&0o777)|0o700)
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode&0o777)); err == nil {
				_, err = io.Copy(f, tr)
				f.Close()
			}
		default:
			t.Fatalf("layer entry %q of type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
			mode := os.FileMode(h.Mode & 0o777)
			if h.Mode&0o1000 != 0 {
				mode |= os.ModeSticky
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

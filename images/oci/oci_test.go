package oci

import (
	"archive/tar"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// inputs writes a stand-in binary and CA bundle: what goes in need not run
// for the image's own properties.
func inputs(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	o := Options{Binary: filepath.Join(dir, "hummer"), CACerts: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(o.Binary, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.CACerts, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return o
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func configName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReproducible: the same binary and certificates give the same digest,
// whatever the files' times on the host and whenever it is built, and the
// layout and the tarball hold that image; another binary gives another.
func TestReproducible(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	o := inputs(t)
	first, err := Image(o)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(o.Binary, later, later); err != nil {
		t.Fatal(err)
	}
	second, err := Image(o)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, first) != digest(t, second) {
		t.Fatalf("two builds of the same input: %s and %s", digest(t, first), digest(t, second))
	}

	dir := filepath.Join(t.TempDir(), "layout")
	if err := Write(second, dir, "hummer:test"); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != digest(t, first) ||
		m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "test" {
		t.Errorf("layout index: %+v, want the one image %s named test", m.Manifests, digest(t, first))
	}
	if err := Write(second, dir, "hummer:test"); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("writing into a layout that exists: %v, want a refusal", err)
	}
	file := filepath.Join(t.TempDir(), "hummer.tar")
	if err := Write(second, file, "hummer:test"); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("hummer:test")
	fromTar, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatal(err)
	}
	// A docker-save tarball has no manifest of its own (a loader writes
	// one): its config and layer are the image's.
	if a, b := configName(t, fromTar), configName(t, first); a != b {
		t.Errorf("the tarball's image config is %s, want %s", a, b)
	}

	if err := os.WriteFile(o.Binary, []byte("\x7fELF another"), 0o755); err != nil {
		t.Fatal(err)
	}
	other, err := Image(o)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, other) == digest(t, first) {
		t.Error("another binary gave the same digest")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dated, err := Image(inputs(t))
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := dated.ConfigFile()
	if !cf.Created.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("with SOURCE_DATE_EPOCH=1700000000 the image was created %v", cf.Created)
	}
}

// TestImageContents: the config's entrypoint, user and labels, and the one
// layer's files, owners and modes.
func TestImageContents(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	o := inputs(t)
	o.Version = "v1.2.3"
	img, err := Image(o)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if strings.Join(c.Entrypoint, " ") != "/usr/local/bin/hummer" || c.User != "65532:65532" || c.WorkingDir != "/var/lib/hummer" ||
		cf.OS != "linux" || !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("config: entrypoint %q user %q workdir %q os %q created %v", c.Entrypoint, c.User, c.WorkingDir, cf.OS, cf.Created)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":   "hummer",
		"org.opencontainers.image.version": "v1.2.3",
		"org.opencontainers.image.source":  "https://github.com/hummer-db/hummer",
		"org.opencontainers.image.created": "1970-01-01T00:00:00Z",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	for _, p := range []string{"4566/tcp", "6123/tcp", "8081/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed: %v", p, c.ExposedPorts)
		}
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Errorf("not an OCI image of one layer: %+v", m)
	}

	type file struct {
		mode     int64
		uid, gid int
		data     string
	}
	files := map[string]file{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[strings.TrimSuffix(h.Name, "/")] = file{h.Mode, h.Uid, h.Gid, string(data)}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uname != "" {
			t.Errorf("%s: time %v, owner name %q; want the epoch and none", h.Name, h.ModTime, h.Uname)
		}
	}
	if f := files["usr/local/bin/hummer"]; f.data != "\x7fELF not really" || f.mode != 0o755 || f.uid != 0 {
		t.Errorf("the binary: %+v", f)
	}
	if f := files["etc/ssl/certs/ca-certificates.crt"]; f.data != "-----BEGIN CERTIFICATE-----\n" {
		t.Errorf("the CA certificates: %+v", f)
	}
	if !strings.Contains(files["etc/passwd"].data, "\nhummer:x:65532:65532:") || !strings.Contains(files["etc/group"].data, "\nhummer:x:65532:") {
		t.Errorf("no user hummer 65532:\n%s%s", files["etc/passwd"].data, files["etc/group"].data)
	}
	if f := files["var/lib/hummer"]; f.uid != 65532 || f.gid != 65532 || f.mode != 0o700 {
		t.Errorf("the data directory: %+v, want 65532's, mode 0700", f)
	}
	if f := files["tmp"]; f.mode != 0o1777 {
		t.Errorf("/tmp: mode %o, want 1777", f.mode)
	}
}

// TestPush pushes to go-containerregistry's in-process registry and pulls the
// image back by its tag: the same digest.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	img, err := Image(inputs(t))
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/hummer/hummer:test"
	pushed, err := Push(img, ref)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, pulled) != pushed || pushed != digest(t, img) {
		t.Errorf("pushed %s, pulled %s, built %s", pushed, digest(t, pulled), digest(t, img))
	}
	if _, err := Push(img, "not a reference"); err == nil {
		t.Error("a bad --push reference was accepted")
	}
}

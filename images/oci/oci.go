// Package oci builds Hummer's container image: an OCI image holding the
// static hummer binary, CA certificates and a non-root user, and nothing else
// (no shell, no package manager: distroless, as the VM image is). It is built
// from files, without a container daemon, with
// github.com/google/go-containerregistry, and is reproducible: every time in
// it is fixed, so the same binary and certificates give the same digest.
//
// It imports nothing of Hummer's: what it packs are files.
package oci

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and ids inside the image.
const (
	// Binary is the hummer binary; the entrypoint.
	Binary = "/usr/local/bin/hummer"
	// CACerts is the CA bundle, where Go's crypto/x509 looks first on Linux.
	CACerts = "/etc/ssl/certs/ca-certificates.crt"
	// DataDir is the working directory and default data directory, owned by
	// the user: a volume is mounted here.
	DataDir = "/var/lib/hummer"
	// UID and GID are the user's, hummer: not root (65532 is distroless's
	// nonroot, which Kubernetes' runAsNonRoot checks numerically).
	UID, GID = 65532, 65532
)

// Ports the roles listen on by default in the image (Cmd and the roles'
// flags): PostgreSQL, the TaskManagers' RPC and the HTTP dashboard.
const (
	PGPort   = 4566
	RPCPort  = 6123
	HTTPPort = 8081
)

// Options say what goes into the image.
type Options struct {
	// Binary is the static hummer binary (linux, the image's architecture).
	Binary string
	// CACerts is the CA bundle to copy in; default the host's
	// /etc/ssl/certs/ca-certificates.crt.
	CACerts string
	// Created is the time every file and the config carry; default the
	// Unix epoch, or $SOURCE_DATE_EPOCH when set (reproducible-builds.org).
	Created time.Time
	// Version is the org.opencontainers.image.version label; default the
	// binary's module version.
	Version string
	// Arch is the image's architecture; default this machine's (the binary's
	// own is not recorded in it).
	Arch string
}

// Image builds the image: one layer, the config with the entrypoint, the
// non-root user and the org.opencontainers.image labels.
func Image(o Options) (v1.Image, error) {
	if o.Binary == "" {
		return nil, errors.New("oci: no binary")
	}
	if o.CACerts == "" {
		o.CACerts = CACerts
	}
	if o.Created.IsZero() {
		created, err := sourceDateEpoch()
		if err != nil {
			return nil, err
		}
		o.Created = created
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("oci: CA certificates: %w", err)
	}
	files, err := rootfs(bin, certs, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	created := v1.Time{Time: o.Created.UTC()}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "hummer image oci", Comment: "hummer, CA certificates, user hummer"}})
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created, cf.OS, cf.Architecture = created, "linux", o.Arch
	cf.Config = v1.Config{
		Entrypoint: []string{Binary},
		// Without arguments the image serves on every interface, as a
		// container must to be reached; a pod's args pick the role.
		Cmd: []string{"serve", fmt.Sprintf("--pg-addr=0.0.0.0:%d", PGPort), fmt.Sprintf("--http-addr=0.0.0.0:%d", HTTPPort),
			"--data-dir=" + DataDir},
		User:       fmt.Sprintf("%d:%d", UID, GID),
		WorkingDir: DataDir,
		Env:        []string{"PATH=/usr/local/bin", "HOME=" + DataDir},
		ExposedPorts: map[string]struct{}{
			fmt.Sprintf("%d/tcp", PGPort): {}, fmt.Sprintf("%d/tcp", RPCPort): {}, fmt.Sprintf("%d/tcp", HTTPPort): {},
		},
		Volumes:    map[string]struct{}{DataDir: {}},
		StopSignal: "SIGTERM",
		Labels:     labels(o, bin),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	return img, nil
}

// labels are the org.opencontainers.image annotations of the image config.
func labels(o Options, bin []byte) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "hummer",
		"org.opencontainers.image.description": "Hummer, a streaming SQL engine: hummer serve | jobmanager | taskmanager",
		"org.opencontainers.image.source":      "https://github.com/hummer-db/hummer",
		"org.opencontainers.image.url":         "https://github.com/hummer-db/hummer",
		"org.opencontainers.image.created":     o.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.version":     o.Version,
	}
	// The revision the binary was built from, as go build recorded it.
	if info, err := buildinfo.Read(bytes.NewReader(bin)); err == nil {
		if l["org.opencontainers.image.version"] == "" && info.Main.Version != "" {
			l["org.opencontainers.image.version"] = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				l["org.opencontainers.image.revision"] = s.Value
			}
		}
	}
	if l["org.opencontainers.image.version"] == "" {
		delete(l, "org.opencontainers.image.version")
	}
	return l
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH as a time, or the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	var secs int64
	if _, err := fmt.Sscan(v, &secs); err != nil {
		return time.Time{}, fmt.Errorf("oci: SOURCE_DATE_EPOCH=%q: want seconds since the epoch", v)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// rootfs is the layer's tar: directories before their files, each entry with
// the same time, owner and no name of the host's, so that it is the same for
// the same files.
func rootfs(bin, certs []byte, mtime time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nhummer:x:%d:%d:hummer:%s:/sbin/nologin\n", UID, GID, DataDir)
	group := fmt.Sprintf("root:x:0:\nhummer:x:%d:\n", GID)
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		data     []byte
	}
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "tmp/", mode: 0o1777}, // os.TempDir: a session's scratch checkpoints
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: "usr/local/bin/hummer", mode: 0o755, data: bin},
		{name: "var/", mode: 0o755},
		{name: "var/lib/", mode: 0o755},
		{name: "var/lib/hummer/", mode: 0o700, uid: UID, gid: GID},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if e.mode&0o1000 != 0 {
			h.Mode = e.mode&0o777 | int64(0o1000) // sticky: c_ISVTX
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	return buf.Bytes(), nil
}

// Write writes img to out: an OCI image layout directory (which must not
// exist or be empty), or with a .tar name a tarball that `docker load` and
// `podman load` read. ref names the image in either (REPO:TAG).
func Write(img v1.Image, out, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("oci: image name %q: %w", ref, err)
	}
	if strings.HasSuffix(out, ".tar") {
		if err := tarball.WriteToFile(out, tag, img); err != nil {
			return fmt.Errorf("oci: %w", err)
		}
		return nil
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("oci: %s is not empty", out)
	}
	p, err := layout.Write(filepath.Clean(out), empty.Index)
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          tag.Name(),
	})); err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	return nil
}

// Push uploads img to a registry as ref (REGISTRY/REPO:TAG), with the
// credentials docker login and podman login keep ($DOCKER_CONFIG,
// ~/.docker/config.json); a registry on localhost is spoken to over HTTP.
func Push(img v1.Image, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("oci: --push %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("oci: pushing %s: %w", ref, err)
	}
	return img.Digest()
}

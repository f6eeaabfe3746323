package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCatalogStoreSurvivesLostVolume: a server given --catalog-store keeps its
// catalog in the bucket, so that one started again on a fresh, empty data
// directory (a pod rescheduled without its volume) has the same tables,
// views and users. A store that holds no catalog yet starts from the data
// directory's, so adding the flag to a server that ran without it loses
// nothing. A server does not overwrite a catalog another one saved since it
// read it.
func TestCatalogStoreSurvivesLostVolume(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed")
	}
	bin := buildHummer(t)
	endpoint, backend := fakeS3(t, "hummer")
	catalog := "s3://hummer/cat?region=us-east-1&endpoint=" + endpoint
	ckpt := "s3://hummer/ckpt?region=us-east-1&endpoint=" + endpoint
	words := filepath.Join(t.TempDir(), "words.txt")
	if err := os.WriteFile(words, []byte(strings.Repeat("a\nb\nc\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(t.TempDir(), "first")
	addr := freeAddr(t)
	startAt := func(addr, dataDir string, flags ...string) *killable {
		t.Helper()
		k := startKillable(t, bin, append([]string{"serve", "--pg-addr", addr, "--http-addr", "", "--data-dir", dataDir,
			"--checkpoint-store", ckpt}, flags...)...)
		waitUntil(t, "PostgreSQL port", k.exited, func() bool {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		return k
	}
	start := func(dataDir string, flags ...string) *killable { return startAt(addr, dataDir, flags...) }

	// Without the flag, the catalog is the data directory's.
	k := start(first)
	psql(t, addr, fmt.Sprintf("CREATE TABLE words (w TEXT) ENGINE=file CONNECTION='file://%s';", words))
	k.kill(t)
	if keys := s3Keys(t, backend, "hummer", "cat/"); len(keys) != 0 {
		t.Fatalf("a server without --catalog-store wrote %v", keys)
	}

	// Given the store, the server starts from that catalog and keeps its
	// changes in the bucket.
	k = start(first, "--catalog-store", catalog)
	if keys := s3Keys(t, backend, "hummer", "cat/"); !slices.Equal(keys, []string{"cat/catalog.json"}) {
		t.Errorf("the bucket holds %v under cat/, want cat/catalog.json", keys)
	}
	psql(t, addr, "CREATE VIEW n AS SELECT w, COUNT(*) AS n FROM words GROUP BY w;\nCREATE USER ann PASSWORD 'pw';")
	want := "a|100\nb|100\nc|100"
	waitUntil(t, "the view's counts", k.exited, func() bool {
		out, err := psqlErr(addr, "SELECT * FROM n ORDER BY w;")
		return err == nil && strings.TrimSpace(out) == want
	})
	k.kill(t)

	// A fresh data directory: the catalog comes from the bucket alone.
	second := filepath.Join(t.TempDir(), "second")
	k = start(second, "--catalog-store", catalog)
	if got := strings.TrimSpace(psql(t, addr, "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1;")); got != "n|VIEW\nwords|BASE TABLE" {
		t.Errorf("tables after a restart on an empty data directory:\n%s", got)
	}
	if got := strings.TrimSpace(psql(t, addr, "SELECT rolname FROM pg_roles WHERE rolname = 'ann';")); got != "ann" {
		t.Errorf("user ann after the restart: %q", got)
	}
	waitUntil(t, "the view's counts after the restart", k.exited, func() bool {
		out, err := psqlErr(addr, "SELECT * FROM n ORDER BY w;")
		return err == nil && strings.TrimSpace(out) == want
	})
	if _, err := os.Stat(filepath.Join(second, "catalog.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory holds a catalog.json beside --catalog-store: %v", err)
	}

	// A second server on the same store (a replacement while the old one
	// still runs): once it has written, the old one's changes are refused
	// rather than overwriting it.
	other := freeAddr(t)
	startAt(other, filepath.Join(t.TempDir(), "third"), "--catalog-store", catalog)
	psql(t, other, "CREATE TABLE x (a INT) ENGINE=blackhole;")
	if out, _ := psqlErr(addr, "CREATE TABLE y (a INT) ENGINE=blackhole;"); !strings.Contains(out, "changed by another server") {
		t.Errorf("the old server's CREATE TABLE after the new one's:\n%s\nwant a refusal", out)
	}
	if got := strings.TrimSpace(psql(t, other, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1;")); got != "n\nwords\nx" {
		t.Errorf("tables the new server sees:\n%s", got)
	}
}

// TestCatalogStoreRefusedAtStart: a server given a catalog store it cannot
// use, or one holding a damaged catalog, refuses to start and says why.
func TestCatalogStoreRefusedAtStart(t *testing.T) {
	bin := buildHummer(t)
	endpoint, backend := fakeS3(t, "there")
	damaged := "damaged/catalog.json"
	if _, err := backend.PutObject("there", damaged, nil, strings.NewReader("{"), 1, nil); err != nil {
		t.Fatal(err)
	}
	for store, want := range map[string]string{
		"s3://not-there/cat?region=us-east-1&endpoint=" + endpoint: "the bucket does not exist",
		"s4://bucket":                            `unknown scheme "s4"`,
		"s3://b?region=us-east-1&endpoint=minio": `endpoint "minio": want http://HOST:PORT`,
		"s3://there/damaged?region=us-east-1&endpoint=" + endpoint: "catalog.json: unexpected end of JSON input",
	} {
		for _, role := range []string{"serve", "jobmanager"} {
			args := []string{role, "--pg-addr", "127.0.0.1:0", "--http-addr", "", "--data-dir", filepath.Join(t.TempDir(), "d"), "--catalog-store", store}
			if role == "jobmanager" {
				args = append(args, "--rpc-addr", "127.0.0.1:0")
			}
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), want) {
				t.Errorf("%s --catalog-store %s: %v\n%s\nwant a refusal saying %q", role, store, err, out, want)
			}
			if !strings.Contains(want, "JSON") && !strings.Contains(string(out), "--catalog-store") {
				t.Errorf("%s --catalog-store %s: the refusal does not name the flag:\n%s", role, store, out)
			}
		}
	}
}

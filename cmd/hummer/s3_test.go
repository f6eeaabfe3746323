package main

import (
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 starts an in-process S3 server holding an empty bucket, puts
// credentials in the environment the test's processes inherit, and returns
// the server's endpoint and backend. The server stops when the test ends.
func fakeS3(t *testing.T, bucket string) (endpoint string, backend *s3mem.Backend) {
	t.Helper()
	backend = s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "hummer")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hummer-secret")
	return srv.URL, backend
}

// s3Keys returns the keys under prefix in the fake server's bucket.
func s3Keys(t *testing.T, backend *s3mem.Backend, bucket, prefix string) []string {
	t.Helper()
	list, err := backend.ListBucket(bucket, &gofakes3.Prefix{Prefix: prefix, HasPrefix: true}, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	return keys
}

// TestCheckpointStoreRefusedAtStart: a server given a checkpoint store it
// cannot use refuses to start and says why, instead of failing each job's
// first checkpoint later.
func TestCheckpointStoreRefusedAtStart(t *testing.T) {
	bin := buildHummer(t)
	endpoint, _ := fakeS3(t, "there")
	for store, want := range map[string]string{
		"s3://not-there/ckpt?region=us-east-1&endpoint=" + endpoint: "the bucket does not exist",
		"s4://bucket":                            `unknown scheme "s4"`,
		"s3://b?region=us-east-1&endpoint=minio": `endpoint "minio": want http://HOST:PORT`,
	} {
		for _, role := range []string{"serve", "jobmanager"} {
			cmd := exec.Command(bin, role, "--pg-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
				"--data-dir", filepath.Join(t.TempDir(), "d"), "--checkpoint-store", store)
			if role == "serve" {
				cmd.Args = append(cmd.Args[:4], cmd.Args[6:]...) // serve has no --rpc-addr
			}
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--checkpoint-store") || !strings.Contains(string(out), want) {
				t.Errorf("%s --checkpoint-store %s: %v\n%s\nwant a refusal saying %q", role, store, err, out, want)
			}
		}
	}
}

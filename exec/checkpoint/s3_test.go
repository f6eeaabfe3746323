package checkpoint

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 starts an in-process S3 server holding an empty bucket and returns
// its endpoint, with credentials in the environment as a user's would be. The
// server stops when the test ends.
func fakeS3(t *testing.T, bucket string) (endpoint string) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "hummer")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hummer-secret")
	return srv.URL
}

// TestS3Prefix: the URL's path is a prefix of every key, as a user reads
// s3://bucket/prefix; two stores under two prefixes of one bucket keep apart.
func TestS3Prefix(t *testing.T) {
	ctx := context.Background()
	query := "?region=eu-west-1&endpoint=" + fakeS3(t, "shared")
	a, err := Open(ctx, "s3://shared/team-a/"+query)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, "s3://shared/team-b"+query)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "1", 1, "0.0", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := a.Complete(ctx, "1", 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Latest(ctx, "1"); ok || err != nil {
		t.Errorf("the store under team-b sees team-a's checkpoint: %v, %v", ok, err)
	}
	// The whole bucket, prefix and all, holds the keys under team-a/.
	whole, err := Open(ctx, "s3://shared"+query)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if data, err := whole.b.ReadAll(ctx, "team-a/1/1/0.0"); err != nil || string(data) != "a" {
		t.Errorf("team-a/1/1/0.0 in the bucket: %q, %v", data, err)
	}
}

// TestBadStoreURLs: a URL no linked driver opens, or an S3 bucket that is not
// there, is an error that names the problem.
func TestBadStoreURLs(t *testing.T) {
	ctx := context.Background()
	for url, want := range map[string]string{
		"s4://bucket":                    `unknown scheme "s4": want one of file, mem, s3`,
		"bucket/dir":                     `unknown scheme ""`,
		"s3:///prefix?region=x":          "no bucket",
		"s3://b/p?prefix=q&region=x":     "both a path and ?prefix=",
		"s3://b?region=x&bogus=1":        "bogus",
		"file://%zz":                     "invalid URL escape",
		"s3://b?endpoint=http://[::1":    "missing ']'",
		"s3://b?endpoint=localhost:9000": `endpoint "localhost:9000": want http://HOST:PORT or https://HOST:PORT`,
	} {
		s, err := Open(ctx, url)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error with %q", url, want)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v, want %q in it", url, err, want)
		}
	}
	s, err := Open(ctx, "s3://not-there?region=us-east-1&endpoint="+fakeS3(t, "there"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Check of a missing bucket: %v, want it to say the bucket does not exist", err)
	}
}

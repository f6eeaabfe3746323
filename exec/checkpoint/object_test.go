package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjectRoundTrip: an object reads as missing until saved, then as what
// the last Save wrote, under the URL's prefix, in S3 and in a directory.
func TestObjectRoundTrip(t *testing.T) {
	ctx := context.Background()
	endpoint := fakeS3(t, "hummer")
	dir := t.TempDir()
	for _, tc := range []struct{ url, whole, key string }{
		{"s3://hummer/team?region=us-east-1&endpoint=" + endpoint, "s3://hummer?region=us-east-1&endpoint=" + endpoint, "team/catalog.json"},
		{"file://" + dir + "/team", "file://" + dir, "team/catalog.json"},
	} {
		o, err := OpenObject(ctx, tc.url, "catalog.json")
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if err := o.Check(ctx); err != nil {
			t.Errorf("%s: Check before the first Save: %v", o, err)
		}
		if data, err := o.Load(); data != nil || err != nil {
			t.Errorf("%s: Load before the first Save: %q, %v; want nil, nil", o, data, err)
		}
		for _, v := range []string{`{"tables":[]}`, `{"tables":[{"name":"t"}]}`} {
			if err := o.Save([]byte(v)); err != nil {
				t.Fatalf("%s: %v", o, err)
			}
			if data, err := o.Load(); string(data) != v || err != nil {
				t.Errorf("%s: Load after saving %s: %q, %v", o, v, data, err)
			}
		}
		whole, err := OpenObject(ctx, tc.whole, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		defer whole.Close()
		if data, err := whole.Load(); !strings.Contains(string(data), `"t"`) || err != nil {
			t.Errorf("%s in the bucket: %q, %v", tc.key, data, err)
		}
	}
	// A file:// object is replaced by a rename: no temporary file stays
	// (fileblob keeps its attributes beside the blob).
	entries, err := os.ReadDir(filepath.Join(dir, "team"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "catalog.json" && e.Name() != "catalog.json.attrs" {
			t.Errorf("the directory holds %s", e.Name())
		}
	}
}

// TestObjectMissingBucket: Check says when the bucket is not there, and Open
// refuses a URL no driver opens, as a server's start-up wants.
func TestObjectMissingBucket(t *testing.T) {
	ctx := context.Background()
	o, err := OpenObject(ctx, "s3://not-there/p?region=us-east-1&endpoint="+fakeS3(t, "there"), "catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Check(ctx); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Check of a missing bucket: %v", err)
	}
	if _, err := OpenObject(ctx, "s4://bucket", "catalog.json"); err == nil || !strings.Contains(err.Error(), `unknown scheme "s4"`) {
		t.Errorf("OpenObject(s4://): %v", err)
	}
}

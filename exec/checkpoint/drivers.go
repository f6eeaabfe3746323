package checkpoint

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/memblob"  // mem:// buckets, for tests
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets: AWS S3 and S3-compatible stores
)

// schemes are the bucket URL schemes of the drivers linked above.
var schemes = []string{"file", "mem", "s3"}

// bucketURL turns a store URL as a user writes it into gocloud's form, and
// refuses one no linked driver opens:
//
//	s3://BUCKET/PREFIX?region=R&endpoint=URL
//
// The path is a prefix of every key (gocloud takes it as ?prefix=PREFIX/;
// its s3 driver would ignore a path). With an endpoint (MinIO, Ceph, a test
// server) requests go path-style, as those stores want, unless the URL says
// use_path_style=false. Credentials come from the AWS SDK's usual chain:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), a
// shared credentials file, or a pod's or instance's role; the region from
// ?region= or AWS_REGION.
func bucketURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("store %q: %w", redact(raw), err)
	}
	if !slices.Contains(schemes, u.Scheme) {
		return "", fmt.Errorf("store %q: unknown scheme %q: want one of %s",
			redact(raw), u.Scheme, strings.Join(schemes, ", "))
	}
	if u.Scheme != "s3" {
		return raw, nil
	}
	if u.Host == "" {
		return "", fmt.Errorf("store %q: no bucket: want s3://BUCKET/PREFIX", redact(raw))
	}
	q := u.Query()
	if prefix := strings.Trim(u.Path, "/"); prefix != "" {
		if q.Has("prefix") {
			return "", fmt.Errorf("store %q: both a path and ?prefix=", redact(raw))
		}
		q.Set("prefix", prefix+"/")
	}
	if ep := q.Get("endpoint"); ep != "" {
		e, err := url.Parse(ep)
		if err != nil {
			return "", fmt.Errorf("store %q: endpoint: %w", redact(raw), err)
		}
		if (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return "", fmt.Errorf("store %q: endpoint %q: want http://HOST:PORT or https://HOST:PORT", redact(raw), ep)
		}
	}
	if q.Has("endpoint") && !q.Has("use_path_style") {
		q.Set("use_path_style", "true")
	}
	u.Path, u.RawPath, u.RawQuery = "", "", q.Encode()
	return u.String(), nil
}

// redact hides a password in a URL for error messages and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

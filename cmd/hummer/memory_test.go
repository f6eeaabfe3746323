package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hummer-db/hummer/session"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1073741824": 1 << 30, "2GiB": 2 << 30, "512MB": 512 << 20, "1.5G": 3 << 29,
		"64 kB": 64 << 10, "1TB": 1 << 40, "100b": 100} {
		if got, err := session.ParseSize(in, 1); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "1 parsec", "-5MB", "0", "1e30GB"} {
		if got, err := session.ParseSize(in, 1); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestCgroupMemoryLimit reads limits from fake cgroup file systems of both
// versions, and none where there is none.
func TestCgroupMemoryLimit(t *testing.T) {
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct {
		files map[string]string
		proc  string
		want  int64
		ok    bool
	}{
		"v2":      {map[string]string{"kubepods/pod1/memory.max": "4294967296\n"}, "0::/kubepods/pod1\n", 4 << 30, true},
		"v2 max":  {map[string]string{"kubepods/pod1/memory.max": "max\n"}, "0::/kubepods/pod1\n", 0, false},
		"v1":      {map[string]string{"memory/docker/abc/memory.limit_in_bytes": "1073741824\n"}, "9:cpu:/\n8:memory:/docker/abc\n", 1 << 30, true},
		"v1 none": {map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, "8:memory:/\n", 0, false},
		"neither": {nil, "0::/\n", 0, false},
	} {
		root := t.TempDir()
		for p, content := range c.files {
			write(filepath.Join(root, p), content)
		}
		proc := filepath.Join(t.TempDir(), "cgroup")
		write(proc, c.proc)
		if got, ok := cgroupMemoryLimit(root, proc); got != c.want || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", name, got, ok, c.want, c.ok)
		}
	}
}

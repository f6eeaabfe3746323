// Package repo is what the benchmarks ask of the Hummer repository they
// measure: its version, and binaries built from it.
package repo

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Version returns `git describe --always --dirty` of dir, or a placeholder
// when dir is not a git checkout.
func Version(dir string) string {
	out, err := exec.Command("git", "-C", dir, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	return strings.TrimSpace(string(out))
}

// Build runs `go build -o out pkg` in dir, its output on stderr.
func Build(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	return nil
}

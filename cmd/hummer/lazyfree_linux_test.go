package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeLazyFree: `hummer serve` runs with GODEBUG=madvdontneed=0 in front of
// the user's own GODEBUG settings, in the process the caller started (exec
// keeps its PID), and leaves a madvdontneed the user set alone.
func TestServeLazyFree(t *testing.T) {
	bin := buildHummer(t)
	for _, c := range []struct{ given, want string }{
		{"gctrace=0", "GODEBUG=madvdontneed=0,gctrace=0"},
		{"madvdontneed=1", "GODEBUG=madvdontneed=1"},
	} {
		addr := freeAddr(t)
		cmd := exec.Command(bin, "serve", "--pg-addr", addr, "--http-addr", "", "--data-dir", filepath.Join(t.TempDir(), "data"))
		cmd.Env = append(os.Environ(), "GODEBUG="+c.given)
		var logs bytes.Buffer
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		waitUntil(t, "PostgreSQL port", exited, func() bool {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
			}
			return err == nil
		})
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
		cmd.Process.Signal(os.Interrupt)
		<-exited
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, kv := range strings.Split(string(environ), "\x00") {
			if strings.HasPrefix(kv, "GODEBUG=") {
				got = append(got, kv)
			}
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("GODEBUG=%s: the serving process has %q, want %q\n%s", c.given, got, c.want, logs.String())
		}
	}
}

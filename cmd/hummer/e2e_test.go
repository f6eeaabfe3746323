package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPsqlWordCount starts the real `hummer serve` binary and drives it with the
// real psql through WordCount over the King James Bible, in both spellings of
// DESIGN.md, comparing every word's count with a plain Go word count.
func TestPsqlWordCount(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	kjv, err := filepath.Abs("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(kjv)
	if err != nil {
		t.Fatal(err)
	}
	addr := startHummer(t)

	create := fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s'", kjv)
	psql(t, addr, create)

	t.Run("string_split", func(t *testing.T) {
		want := map[string]int{}
		for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
			for _, w := range strings.Split(strings.ToLower(line), " ") {
				if w != "" {
					want[w]++
				}
			}
		}
		out := psql(t, addr, `SELECT word, COUNT(*) AS n
			FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t
			WHERE word <> '' GROUP BY word`)
		checkCounts(t, out, want)
	})
	t.Run("regexp_split_to_table", func(t *testing.T) {
		want := map[string]int{}
		for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
			for _, w := range strings.Fields(strings.ToLower(line)) {
				want[w]++
			}
		}
		out := psql(t, addr, `SET parallelism = 1; SELECT word, COUNT(*) AS n
			FROM (SELECT regexp_split_to_table(lower(line), '[[:space:]]+') AS word FROM docs) AS t
			WHERE word <> '' GROUP BY word`)
		checkCounts(t, out, want)
	})
	t.Run("errors keep the server up", func(t *testing.T) {
		// psql goes on after an error in a script (ON_ERROR_STOP=0), so the last
		// statement's answer shows the session survived both errors.
		out, _ := psqlErr(addr, "\\set VERBOSITY verbose\nSELEC 1;\nSELECT * FROM nope;\nSELECT 40 + 2;\n")
		for _, want := range []string{"ERROR:  42601", "ERROR:  42P01", "\n42\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("psql output lacks %q:\n%s", want, out)
			}
		}
		if got := strings.TrimSpace(psql(t, addr, "SELECT 1 + 1")); got != "2" {
			t.Errorf("after errors, SELECT 1 + 1 = %q", got)
		}
	})
}

// checkCounts compares psql's "word|n" lines with the reference counts.
func checkCounts(t *testing.T, out string, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		word, n, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("unexpected psql line %q", line)
		}
		c, err := strconv.Atoi(n)
		if err != nil {
			t.Fatalf("count of %q is %q", word, n)
		}
		if _, dup := got[word]; dup {
			t.Errorf("word %q returned twice", word)
		}
		got[word] = c
	}
	if len(got) != len(want) {
		t.Errorf("got %d distinct words, want %d", len(got), len(want))
	}
	bad := 0
	for w, n := range want {
		if got[w] != n && bad < 10 {
			t.Errorf("count(%q) = %d, want %d", w, got[w], n)
			bad++
		}
	}
}

// buildHummer builds the hummer binary once per test into a temporary directory.
func buildHummer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hummer")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProcess runs bin with args until the test ends (SIGINT, then SIGKILL after
// 10s), and returns a channel closed when it exits.
func startProcess(t *testing.T, bin string, args ...string) <-chan struct{} {
	t.Helper()
	return startProcessEnv(t, bin, nil, args...)
}

// startProcessEnv is startProcess with env added to the process's environment.
func startProcessEnv(t *testing.T, bin string, env []string, args ...string) <-chan struct{} {
	t.Helper()
	var logs bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s %s log:\n%s", filepath.Base(bin), args[0], logs.String())
		}
	})
	return exited
}

// waitUntil polls ready until it holds, failing the test after 30s or when the
// process exits first.
func waitUntil(t *testing.T, what string, exited <-chan struct{}, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		select {
		case <-exited:
			t.Fatalf("the process exited before %s", what)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30s", what)
		}
	}
}

// startHummer builds the hummer binary and runs `hummer serve` on a free port
// until the test ends; it returns the address once the server accepts
// connections.
func startHummer(t *testing.T) string {
	t.Helper()
	bin := buildHummer(t)
	addr := freeAddr(t)
	exited := startProcess(t, bin, "serve", "--pg-addr", addr, "--data-dir", filepath.Join(t.TempDir(), "data"))
	waitUntil(t, "PostgreSQL port", exited, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// psql runs statements with the real psql binary in unaligned, tuples-only mode
// and returns its standard output; any error fails the test.
func psql(t *testing.T, addr, script string) string {
	t.Helper()
	out, err := psqlErr(addr, script)
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	return out
}

func psqlErr(addr, script string) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=0",
		"-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

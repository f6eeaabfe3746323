package wire

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// psql runs the real psql binary against ts with the given arguments and returns
// its stdout and stderr.
func psql(t *testing.T, ts *testServer, args ...string) (stdout, stderr string) {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-h", "127.0.0.1", "-p", ts.port, "-U", "x", "-d", "y", "-X"}, args...)...)
	cmd.Env = append(os.Environ(), "PGCLIENTENCODING=UTF8", "PGCONNECT_TIMEOUT=10", "LC_ALL=C.UTF-8", "PAGER=", "PSQL_PAGER=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("psql %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

func TestPsqlValues(t *testing.T) {
	ts := startServer(t)
	out, errOut := psql(t, ts, "-A", "-t", "-c", "SELECT types")
	want := "t|-9223372036854775808|1.5e-07|-1.50|héllo, 'wörld'|2024-01-02 03:04:05.12|\n||||||\n"
	if out != want || errOut != "" {
		t.Errorf("got %q (stderr %q), want %q", out, errOut, want)
	}
}

func TestPsqlMultiStatement(t *testing.T) {
	ts := startServer(t)
	// One -c is one Query message; psql 15 prints every result.
	out, _ := psql(t, ts, "-A", "-t", "-c", "SELECT 1; gen 3; CREATE TABLE t")
	if out != "1\n0\n1\n2\nCREATE TABLE\n" {
		t.Errorf("got %q", out)
	}
}

func TestPsqlErrorsAndSessionGoesOn(t *testing.T) {
	ts := startServer(t)
	out, errOut := psql(t, ts, "-A", "-t",
		"-c", `\set VERBOSITY verbose`,
		"-c", "err table",
		"-c", "SELECT 1",
		"-c", "err internal",
		"-c", "SHOW x")
	if out != "1\non\n" {
		t.Errorf("stdout %q", out)
	}
	for _, want := range []string{
		`ERROR:  42P01: table "nope" does not exist`,
		"LINE 1: err table\n            ^", // psql draws the caret from Position 5
		"ERROR:  XX000: internal error",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "secret") {
		t.Errorf("internal error text reached the client:\n%s", errOut)
	}
}

func TestPsqlScript(t *testing.T) {
	ts := startServer(t)
	script := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(script, []byte("SELECT 1;\nbogus here;\nnotice;\n\nSHOW x;\n"), 0o644)
	out, errOut := psql(t, ts, "-A", "-t", "-f", script)
	if out != "1\nSET\non\n" {
		t.Errorf("stdout %q", out)
	}
	for _, want := range []string{
		`psql:` + script + `:2: ERROR:  syntax error at or near "bogus"`,
		"NOTICE:  first notice",
		"NOTICE:  second notice",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// FormatTable must print what psql prints for the same result.
func TestFormatTableMatchesPsql(t *testing.T) {
	ts := startServer(t)
	for k, tc := range tableCases {
		out, _ := psql(t, ts, "-c", fmt.Sprintf("table %d", k))
		batches := buildBatches(ts.be.mem, tc.schema, tc.rows)
		var buf bytes.Buffer
		err := FormatTable(&buf, tc.schema, batches, nil)
		for _, b := range batches {
			b.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != out {
			t.Errorf("case %d:\nFormatTable:\n%s\npsql:\n%s", k, buf.String(), out)
		}
		if tc.want != "" && out != tc.want {
			t.Errorf("case %d: psql through this server printed\n%s\nPostgreSQL's own result printed\n%s", k, out, tc.want)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// readmeBlock returns the README's code block that holds marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(data), "```")
	for i := 1; i < len(parts); i += 2 {
		if strings.Contains(parts[i], marker) {
			_, body, _ := strings.Cut(parts[i], "\n") // after the language tag
			return body
		}
	}
	t.Fatalf("README.md has no code block with %q", marker)
	return ""
}

// TestReadmeKafkaExample runs the README's continuous-query example as it
// is written, against a Kafka-protocol broker on the address it names: the
// view counts the words produced into the input topic afterwards.
func TestReadmeKafkaExample(t *testing.T) {
	block := readmeBlock(t, "ENGINE=kafka CONNECTION='kafka://127.0.0.1:9092/lines'")
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(9092), kfake.SeedTopics(1, "lines", "counts"))
	if err != nil {
		t.Skipf("a broker on 127.0.0.1:9092, as the README's example names: %v", err)
	}
	defer broker.Close()
	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	var last string
	for _, stmt := range strings.Split(block, ";") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			continue
		}
		if strings.HasPrefix(stmt, "SELECT") {
			last = stmt // run once input has arrived
			continue
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	w := &kafka.Writer{Addr: kafka.TCP("127.0.0.1:9092"), Topic: "lines", BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("The cat and the hat")}, kafka.Message{Value: []byte("the end")}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int64
		err := conn.QueryRow(ctx, last).Scan(&n)
		if err == nil && n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, %v; want 3", last, n, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// TestReadmeTablesExample runs the README's stored-table session through the
// real psql and compares what psql prints with what the README shows (the
// result is a hand count: pear's DEFAULT 1.00 doubled, plum deleted).
func TestReadmeTablesExample(t *testing.T) {
	block := readmeBlock(t, "CREATE TABLE fruit")
	var script, want []string
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if stmt, ok := strings.CutPrefix(line, "hummer=# "); ok {
			script = append(script, stmt)
		} else {
			want = append(want, line)
		}
	}
	addr := startTestServer(t)
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(script, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	got := string(out)
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if len(lines) < len(want) || strings.Join(lines[len(lines)-len(want):], "\n") != strings.Join(want, "\n") {
		t.Errorf("psql printed:\n%s\nthe README shows:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestReadmePsqlSession types the README's psql session into the real psql
// in a terminal (tmux) and compares the screen with the README, prompts and
// all. The server is `make run`'s: a docs table over data/kjv.txt. The
// banner's psql version is the machine's, so only its server part is
// compared; /tmp/ in the session stands for a directory of the test's own.
func TestReadmePsqlSession(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	block := strings.Split(strings.TrimRight(readmeBlock(t, "hummer=# \\dt"), "\n"), "\n")
	command, ok := strings.CutPrefix(block[0], "$ psql -h 127.0.0.1 -p 4566 -U hummer")
	if !ok || command != "" {
		t.Fatalf("the session starts with %q, want `$ psql -h 127.0.0.1 -p 4566 -U hummer`", block[0])
	}
	first := 0 // the first prompt
	for first < len(block) && !strings.HasPrefix(block[first], "hummer=# ") {
		first++
	}
	banner, want := block[1:first], block[first:]
	if len(banner) != 3 || !strings.HasSuffix(banner[0], ", server 15.0 (Hummer))") || banner[1] != `Type "help" for help.` {
		t.Errorf("the README's banner %q is not psql's", banner)
	}

	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	kjv, err := filepath.Abs("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s'", kjv))
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir() + "/"
	local := func(s string) string { return strings.ReplaceAll(s, "/tmp/", tmp) }
	host, port, _ := net.SplitHostPort(addr)
	name := "hummer-readme-" + fmt.Sprint(os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// Wide and tall enough that no line wraps and nothing scrolls away; no
	// pager, whatever the environment says.
	tmux("new-session", "-d", "-s", name, "-x", "250", "-y", "100",
		fmt.Sprintf("PAGER=cat PSQL_PAGER=cat psql -X -h %s -p %s -U hummer", host, port))
	t.Cleanup(func() { exec.Command("tmux", "kill-session", "-t", name).Run() })
	// screen is what the terminal shows from the first prompt on, each line
	// without trailing spaces, the paths given back their README form.
	screen := func() []string {
		lines := strings.Split(tmux("capture-pane", "-t", name, "-p", "-J", "-S", "-"), "\n")
		var out []string
		for _, l := range lines {
			l = strings.ReplaceAll(strings.TrimRight(l, " "), tmp, "/tmp/")
			if len(out) > 0 || strings.HasPrefix(l, "hummer=#") {
				out = append(out, l)
			}
		}
		for len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
		return out
	}
	prompts := func(lines []string) int {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "hummer=#") || strings.HasPrefix(l, "hummer-#") {
				n++
			}
		}
		return n
	}
	typed := 0
	for _, line := range want {
		input, ok := strings.CutPrefix(line, "hummer=# ")
		if !ok {
			input, ok = strings.CutPrefix(line, "hummer-# ")
		}
		if !ok {
			continue
		}
		// Wait for the prompt that takes this line: one more than typed so far.
		waitScreen(t, screen, fmt.Sprintf("prompt %d", typed+1), func(s []string) bool { return prompts(s) == typed+1 })
		// A ; that ends an argument is tmux's command separator: escape it.
		text := local(input)
		if strings.HasSuffix(text, ";") {
			text = strings.TrimSuffix(text, ";") + "\\;"
		}
		tmux("send-keys", "-t", name, "-l", text)
		tmux("send-keys", "-t", name, "Enter")
		typed++
	}
	got := waitScreen(t, screen, "the last prompt", func(s []string) bool { return prompts(s) == typed+1 })
	got = got[:len(got)-1] // the prompt waiting for more
	for i := range want {
		want[i] = strings.TrimRight(want[i], " ")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("psql shows:\n%s\n\nthe README shows:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// waitScreen polls screen until ok holds, failing after a minute.
func waitScreen(t *testing.T, screen func() []string, what string, ok func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; the terminal shows:\n%s", what, strings.Join(s, "\n"))
		}
		time.Sleep(50 * time.Millisecond) // polling a terminal with a deadline
	}
}

// psqlScript runs script through psql -f - against the server at addr, with
// the extra arguments, and returns what psql printed; a failing statement
// fails the test.
func psqlScript(t *testing.T, ctx context.Context, addr, script string, args ...string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	args = append([]string{"-X", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-f", "-"}, args...)
	cmd := exec.CommandContext(ctx, "psql", args...)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	return string(out)
}

// readmeNcLines returns the lines the README types into `nc -lk 9999`.
func readmeNcLines(t *testing.T) []string {
	var typed []string
	for _, line := range strings.Split(strings.TrimRight(readmeBlock(t, "$ nc -lk 9999"), "\n"), "\n") {
		if !strings.HasPrefix(line, "$ ") {
			typed = append(typed, line)
		}
	}
	return typed
}

// TestReadmeSocketExample runs the README's WordCount over `nc -lk 9999` as
// it is written: the test listens on 127.0.0.1:9999, as nc would, psql runs
// the session's statements, the lines of the nc block are sent once the view
// exists, and what psql prints for the last query must be what the README
// shows (PostgreSQL's answer for those lines).
func TestReadmeSocketExample(t *testing.T) {
	typed := readmeNcLines(t)
	block := readmeBlock(t, "ENGINE=socket CONNECTION='socket://127.0.0.1:9999'")
	var stmts, want []string
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		switch stmt, ok := strings.CutPrefix(line, "hummer=# "); {
		case ok:
			stmts = append(stmts, stmt)
		case !strings.HasPrefix(line, "$ "):
			want = append(want, line)
		}
	}
	if len(typed) == 0 || len(stmts) < 2 || len(want) == 0 {
		t.Fatalf("the README's socket example: lines %q, statements %q, output %q", typed, stmts, want)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:9999")
	if err != nil {
		t.Skipf("listening on 127.0.0.1:9999, as the README's example names: %v", err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	psqlRun := func(script string) string { return psqlScript(t, ctx, addr, script, "-q") }
	psqlRun(strings.Join(stmts[:len(stmts)-1], "\n"))

	c, err := ln.Accept() // the view's job connects
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(typed, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	words := 0
	for _, l := range typed {
		words += len(strings.Fields(l))
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int64
		err := conn.QueryRow(ctx, "SELECT sum(n) FROM wc").Scan(&n)
		if err == nil && n == int64(words) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SELECT sum(n) FROM wc: %d, %v; want %d", n, err, words)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	if got := strings.TrimRight(psqlRun(stmts[len(stmts)-1]), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("psql printed:\n%s\nthe README shows:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestReadmeNexmarkExample runs the README's event-time example as written:
// its statements through psql, whose output must be the README's (the
// numbers are PostgreSQL's for the same events: cmd/hummer/nexmark_test.go
// loads them there; its q11 form is the session query's).
func TestReadmeNexmarkExample(t *testing.T) {
	block := readmeBlock(t, "ENGINE=nexmark CONNECTION='nexmark://bid?events=200000")
	var stmts []string
	var want, cur []string
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if s, ok := cutPrompt(line); ok {
			cur = append(cur, s)
			if strings.HasSuffix(s, ";") {
				stmts = append(stmts, strings.Join(cur, "\n"))
				cur = nil
			}
			continue
		}
		want = append(want, line)
	}
	if len(stmts) < 2 {
		t.Fatalf("the README's event-time example has statements %q", stmts)
	}
	addr := startTestServer(t)
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", "-X", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(stmts, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if got := strings.TrimRight(string(out), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("psql printed:\n%s\nthe README shows:\n%s", got, strings.Join(want, "\n"))
	}
}

// cutPrompt returns a transcript line without psql's prompt (hummer=#,
// hummer-# or hummer(#), ok false for a line of output.
func cutPrompt(line string) (string, bool) {
	for _, p := range []string{"hummer=# ", "hummer-# ", "hummer(# "} {
		if s, ok := strings.CutPrefix(line, p); ok {
			return s, true
		}
	}
	return "", false
}

// TestReadmeProctimeExample runs the README's WordCount per 10 seconds of
// processing time over `nc -lk 9999` as written: psql runs the statements,
// the nc block's lines are sent once the view exists, and nothing more; the
// view's rows come only when the wall clock has passed the window's end
// (the window closes without input), and what psql prints for the last
// query must be what the README shows but for the clock's times, which must
// be ends of 10-second windows.
func TestReadmeProctimeExample(t *testing.T) {
	typed := readmeNcLines(t)
	block := readmeBlock(t, "PROCTIME() AS t FROM lines_in")
	var stmts, outs []string // each statement, and what psql prints for it
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		s, ok := cutPrompt(line)
		switch {
		case ok && (len(stmts) == 0 || strings.HasSuffix(stmts[len(stmts)-1], ";")):
			stmts, outs = append(stmts, s), append(outs, "")
		case ok:
			stmts[len(stmts)-1] += "\n" + s
		case len(outs) > 0:
			outs[len(outs)-1] += line + "\n"
		}
	}
	if len(typed) == 0 || len(stmts) != 3 {
		t.Fatalf("the README's processing-time example: lines %q, statements %q", typed, stmts)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:9999")
	if err != nil {
		t.Skipf("listening on 127.0.0.1:9999, as the README's example names: %v", err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	psqlRun := func(script string) string { return psqlScript(t, ctx, addr, script) }
	// psql -f names the script's line before a notice; at a prompt it does not.
	where := regexp.MustCompile(`(?m)^psql:<stdin>:\d+: `)
	for i, s := range stmts[:2] {
		if got := where.ReplaceAllString(psqlRun(s), ""); strings.TrimRight(got, "\n") != strings.TrimRight(outs[i], "\n") {
			t.Errorf("psql printed for %q:\n%s\nthe README shows:\n%s", s, got, outs[i])
		}
	}
	c, err := ln.Accept() // the view's job connects
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(typed, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	words := 0
	for _, l := range typed {
		words += len(strings.Fields(l))
	}
	waitFor(t, ctx, "the window of processing time to close with no more input", func() bool {
		var n int64
		err := conn.QueryRow(ctx, "SELECT coalesce(sum(n), 0) FROM wc10").Scan(&n)
		return err == nil && n == int64(words)
	})
	got := psqlRun(stmts[2])
	clock := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	for _, s := range clock.FindAllString(got, -1) {
		until, err := time.Parse(time.DateTime, s)
		if err != nil || until.Second()%10 != 0 || until.Before(sent.Truncate(time.Second)) || until.After(time.Now().Add(time.Second)) {
			t.Errorf("window_end %s: not the end of a 10-second window from %s to now (%v)", s, sent.UTC().Format(time.DateTime), err)
		}
	}
	if g, w := clock.ReplaceAllString(got, "CLOCK"), clock.ReplaceAllString(outs[2], "CLOCK"); strings.TrimRight(g, "\n") != strings.TrimRight(w, "\n") {
		t.Errorf("psql printed:\n%s\nthe README shows:\n%s", got, outs[2])
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		read, total, in, out int64
		elapsed              time.Duration
		want                 string
	}{
		{512, 1024, 10, 3, 1500 * time.Millisecond,
			"[###############...............]  50% 512 bytes of 1.0 kB  10 rows read, 3 rows out, 1.5s"},
		// Reading past a range's end to finish a line does not pass 100%.
		{2048, 1024, 7, 0, 2 * time.Second,
			"[##############################] 100% 1.0 kB of 1.0 kB  7 rows read, 0 rows out, 2s"},
		// Sources that know no total (a generator, Kafka): counts only.
		{0, 0, 5520, 1, 3*time.Second + 42*time.Millisecond, "5520 rows read, 1 rows out, 3s"},
		{3 << 30, 4 << 30, 0, 0, time.Minute, "[######################........]  75% 3.0 GB of 4.0 GB  0 rows read, 0 rows out, 1m0s"},
	} {
		if got := progressLine(c.read, c.total, c.in, c.out, c.elapsed); got != c.want {
			t.Errorf("progressLine(%d, %d, %d, %d, %s) =\n%q, want\n%q", c.read, c.total, c.in, c.out, c.elapsed, got, c.want)
		}
	}
}

// TestSQLProgress runs `hummer sql` on a terminal (tmux) over a query that
// takes about three seconds (6000 Nexmark events at 2000 a second): its
// progress line shows while it runs and is gone when the result is printed.
// With its output, standard output, not a terminal (a file, a pipe) no
// progress is written, also when standard error still is one.
func TestSQLProgress(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	bin := buildHummer(t)
	script := `CREATE TABLE bids (price BIGINT) ENGINE=nexmark CONNECTION='nexmark://bid?events=6000&rate=2000'; SELECT COUNT(*) FROM bids;`
	// onTerminal runs `hummer sql` in a tmux pane, with redirect after it,
	// and returns whether a progress line ever showed and the last screen.
	onTerminal := func(redirect string) (sawProgress bool, screen string) {
		name := fmt.Sprint("hummer-progress-", time.Now().UnixNano())
		cmd := fmt.Sprintf("%s sql --data-dir %s -e %q %s; echo EXITED", bin, filepath.Join(t.TempDir(), "d"), script, redirect)
		if out, err := exec.Command("tmux", "new-session", "-d", "-s", name, "-x", "200", "-y", "20", cmd+"; sleep 60").CombinedOutput(); err != nil {
			t.Fatalf("tmux: %v\n%s", err, out)
		}
		defer exec.Command("tmux", "kill-session", "-t", name).Run()
		pane := func() string {
			out, _ := exec.Command("tmux", "capture-pane", "-t", name, "-p").Output()
			return string(out)
		}
		deadline := time.Now().Add(60 * time.Second)
		for screen = pane(); !strings.Contains(screen, "EXITED"); screen = pane() {
			sawProgress = sawProgress || strings.Contains(screen, "rows read")
			if time.Now().After(deadline) {
				t.Fatalf("hummer sql did not end within 60s:\n%s", screen)
			}
			time.Sleep(50 * time.Millisecond) // polling the terminal with a deadline
		}
		return sawProgress, screen
	}

	sawProgress, screen := onTerminal("")
	if !sawProgress {
		t.Errorf("no progress line showed while the query ran; the screen at the end:\n%s", screen)
	}
	// Nexmark's bids are 46 of every 50 events.
	if strings.Contains(screen, "rows read") || !strings.Contains(screen, " 5520\n") {
		t.Errorf("at the end the screen should hold the count 5520 and no progress line:\n%s", screen)
	}

	// The result into a file, standard error still the terminal.
	result := filepath.Join(t.TempDir(), "result.txt")
	if sawProgress, screen := onTerminal("> " + result); sawProgress || strings.Contains(screen, "rows read") {
		t.Errorf("with its output in a file hummer sql drew progress on the terminal:\n%s", screen)
	}
	if out, err := os.ReadFile(result); err != nil || strings.Contains(string(out), "rows read") || !strings.Contains(string(out), " 5520\n") {
		t.Errorf("hummer sql into a file: %v\n%s\nwant the count 5520 and no progress", err, out)
	}

	out, err := exec.Command(bin, "sql", "--data-dir", filepath.Join(t.TempDir(), "e"), "-e", script).CombinedOutput()
	if err != nil || strings.Contains(string(out), "rows read") || !strings.Contains(string(out), " 5520\n") {
		t.Errorf("hummer sql into a pipe: %v\n%s\nwant the count 5520 and no progress", err, out)
	}
}

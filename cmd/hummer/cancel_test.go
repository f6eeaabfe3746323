package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// cancelTable is the Kafka table the cancel tests stream, and copyStatement the
// statement that never ends on its own.
const (
	cancelTable   = "ctrl_c_lines"
	copyStatement = "COPY (SELECT line FROM " + cancelTable + ") TO STDOUT"
)

// TestCancel stops `COPY (SELECT ...) TO STDOUT` over a Kafka table, which runs
// until the client cancels it, the ways a user does: Ctrl-C in psql (at a
// terminal, and with -c) and a cancelled context in pgx. Each time the client
// reports SQLSTATE 57014, the job leaves SHOW PROCESSLIST and the server goes
// on answering.
//
// psql installs its SIGINT handler whatever its input; the handler sends a
// CancelRequest (on a new connection, with the BackendKeyData of startup) only
// while a statement runs. So Ctrl-C cancels both at a terminal and with -c; in
// a script read from a file or a pipe psql then also gives up the script and
// exits with 3 (psql's EXIT_USER), which the stdin case checks.
func TestCancel(t *testing.T) {
	psqlPath, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "lines"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	brokerAddr := broker.ListenAddrs()[0]

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// More than psql's 4 KiB stdout buffer, so that rows reach a pipe before
	// psql ends (at a terminal each line is flushed).
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(brokerAddr), Topic: "lines", BatchTimeout: time.Millisecond, Transport: tr}
	var msgs []kafka.Message
	for i := range 400 {
		msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, "kafka-row-%04d of the stream that never ends", i)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	addr := startHummer(t)
	admin := connectPgx(t, ctx, addr)
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/lines'",
		cancelTable, brokerAddr)); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	psqlArgs := []string{"-X", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer"}

	// cancelled checks, once a client reported the cancel, that the COPY job
	// that was running has gone or is cancelled, and that the server answers.
	cancelled := func(t *testing.T, job int64) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("job %d gone or cancelled", job), nil, func() bool {
			jobs := copyJobs(t, ctx, admin)
			state, listed := jobs[job]
			return !listed || state == "cancelled"
		})
		var n int64
		if err := admin.QueryRow(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
			t.Errorf("after the cancel, SELECT 40 + 2 = %d, %v", n, err)
		}
	}

	t.Run("psql at a terminal", func(t *testing.T) {
		out := &watcher{}
		term := startInTerminal(t, out, psqlPath, append(psqlArgs, "-n", "-P", "pager=off")...)
		out.waitFor(t, "=# ") // hummer is a superuser: psql's prompt ends in #
		term.typeText(t, copyStatement+";\n")
		out.waitFor(t, "insert\tkafka-row-")
		job := runningCopyJob(t, ctx, admin)
		term.typeText(t, "\x03") // the terminal turns Ctrl-C into SIGINT for psql
		out.waitFor(t, "Cancel request sent")
		out.waitFor(t, "ERROR:  canceling statement due to user request")
		cancelled(t, job)
		// The same psql session goes on.
		out.waitFor(t, "=# ") // hummer is a superuser: psql's prompt ends in #
		term.typeText(t, "\\set VERBOSITY verbose\n")
		term.typeText(t, copyStatement+";\n")
		out.waitFor(t, "insert\tkafka-row-")
		job = runningCopyJob(t, ctx, admin)
		term.typeText(t, "\x03")
		out.waitFor(t, "ERROR:  57014: canceling statement due to user request")
		cancelled(t, job)
		term.typeText(t, "SELECT 40 + 2 AS answer;\n")
		out.waitFor(t, "(1 row)")
		if !strings.Contains(out.since(t, "SELECT 40 + 2 AS answer;"), "42") {
			t.Errorf("SELECT 40 + 2 after the cancel:\n%s", out.tail())
		}
		term.typeText(t, "\\q\n")
		if err := term.wait(t); err != nil {
			t.Errorf("psql: %v\n%s", err, out.tail())
		}
	})

	// Outside a terminal the SIGINT comes from kill(2), as from a supervisor.
	t.Run("psql -c", func(t *testing.T) {
		out := &watcher{}
		p := startPsql(t, out, nil, psqlPath, append(psqlArgs, "-v", "VERBOSITY=verbose", "-c", copyStatement)...)
		out.waitFor(t, "insert\tkafka-row-")
		job := runningCopyJob(t, ctx, admin)
		p.signal(t, os.Interrupt)
		out.waitFor(t, "ERROR:  57014: canceling statement due to user request")
		err := p.wait(t)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("psql -c exited with %v, want status 1 (a failed statement)", err)
		}
		cancelled(t, job)
	})

	t.Run("psql script on stdin", func(t *testing.T) {
		out := &watcher{}
		// The script's second statement is not reached: Ctrl-C ends a script.
		script := copyStatement + ";\nSELECT 'after the cancel';\n"
		p := startPsql(t, out, strings.NewReader(script), psqlPath, append(psqlArgs, "-f", "-")...)
		out.waitFor(t, "insert\tkafka-row-")
		job := runningCopyJob(t, ctx, admin)
		p.signal(t, os.Interrupt)
		out.waitFor(t, "ERROR:  canceling statement due to user request")
		err := p.wait(t)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("psql -f - exited with %v, want status 3 (stopped by the user)", err)
		}
		if strings.Contains(out.String(), "after the cancel") {
			t.Errorf("psql went on with the script after Ctrl-C:\n%s", out.tail())
		}
		cancelled(t, job)
	})

	// pgx sends a CancelRequest for a cancelled context when configured to (its
	// default closes the connection instead): the statement ends with 57014 and
	// the connection stays usable.
	t.Run("pgx", func(t *testing.T) {
		cfg := pgxConfig(t, addr)
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 30 * time.Second}
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())

		copyCtx, stopCopy := context.WithCancel(ctx)
		defer stopCopy()
		var job int64
		var first string
		rows := writerFunc(func(p []byte) (int, error) {
			if first == "" {
				// Rows came, so the job runs: find it, then cancel.
				first = string(p)
				job = runningCopyJob(t, ctx, admin)
				stopCopy()
			}
			return len(p), nil
		})
		_, err = conn.PgConn().CopyTo(copyCtx, rows, copyStatement)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to user request" {
			t.Fatalf("cancelled COPY: %v, want 57014 canceling statement due to user request", err)
		}
		if !strings.HasPrefix(first, "insert\tkafka-row-") {
			t.Errorf("first COPY line %q", first)
		}
		var n int64
		if err := conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
			t.Errorf("the same connection after the cancel: SELECT 40 + 2 = %d, %v", n, err)
		}
		cancelled(t, job)
	})
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// copyJobs returns the state of each job of SHOW PROCESSLIST that streams the
// cancel tests' table, by job ID.
func copyJobs(t *testing.T, ctx context.Context, conn *pgx.Conn) map[int64]string {
	t.Helper()
	rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[int64]string{}
	for rows.Next() {
		var id int64
		var statement, state string
		if err := rows.Scan(&id, &statement, &state, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		if statement == copyStatement {
			jobs[id] = state
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// runningCopyJob returns the one running COPY job of the cancel tests.
func runningCopyJob(t *testing.T, ctx context.Context, conn *pgx.Conn) int64 {
	t.Helper()
	var running []int64
	jobs := copyJobs(t, ctx, conn)
	for id, state := range jobs {
		if state == "running" {
			running = append(running, id)
		}
	}
	if len(running) != 1 {
		t.Fatalf("SHOW PROCESSLIST: COPY jobs %v, want one running", jobs)
	}
	return running[0]
}

// watcher collects a process's output and lets a test wait for a string in it.
type watcher struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	seen    int           // waitFor's matches end here: the next wait looks after it
	changed chan struct{} // closed at the next Write
}

func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
	return len(p), nil
}

func (w *watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits up to 30s for s to appear after the previous match, and fails
// the test if it does not.
func (w *watcher) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		if i := strings.Index(w.buf.String()[w.seen:], s); i >= 0 {
			w.seen += i + len(s)
			w.mu.Unlock()
			return
		}
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %q in the output within 30s; output ends:\n%s", s, w.tail())
		}
	}
}

// tail returns the end of the output, enough to show where it stopped.
func (w *watcher) tail() string {
	out := w.String()
	if len(out) > 2000 {
		out = "..." + out[len(out)-2000:]
	}
	return out
}

// since returns the output after the last occurrence of s.
func (w *watcher) since(t *testing.T, s string) string {
	t.Helper()
	out := w.String()
	i := strings.LastIndex(out, s)
	if i < 0 {
		t.Fatalf("no %q in the output:\n%s", s, out)
	}
	return out[i+len(s):]
}

// child is a process the test stops when it ends.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

// startChild starts cmd and arranges for it to be killed, if still running, when
// the test ends; after is called once it has exited.
func startChild(t *testing.T, cmd *exec.Cmd, after func()) *child {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if after != nil {
			after()
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// startPsql runs psql with stdin (nil: none) and its output to out.
func startPsql(t *testing.T, out io.Writer, stdin io.Reader, psql string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(psql, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, out, out
	return startChild(t, cmd, nil)
}

func (p *child) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits up to 30s for the process to exit and returns its exit status.
func (p *child) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit within 30s", p.cmd.Path)
		return nil
	}
}

// terminal is a process run in a pseudo-terminal of its own, as from a
// terminal emulator: its session's controlling terminal, so that the terminal
// sends it SIGINT for Ctrl-C.
type terminal struct {
	*child
	master *os.File
}

// startInTerminal runs name in a new pseudo-terminal, copying what it prints
// to out.
func startInTerminal(t *testing.T, out io.Writer, name string, args ...string) *terminal {
	t.Helper()
	master, slave, err := openPty()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(os.Environ(), "TERM=dumb")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	copied := make(chan struct{})
	go func() {
		// Ends when the terminal is gone: reading the master fails once the
		// process has exited (EIO) or the master is closed.
		io.Copy(out, master)
		close(copied)
	}()
	t.Cleanup(func() { // also if the process never started
		slave.Close()
		master.Close()
		<-copied
	})
	p := startChild(t, cmd, func() {
		// Let the copy drain what the process printed last, then stop it.
		select {
		case <-copied:
		case <-time.After(5 * time.Second):
		}
		master.Close()
		<-copied
	})
	slave.Close() // the child holds it now
	return &terminal{child: p, master: master}
}

// typeText writes s to the terminal as if typed.
func (term *terminal) typeText(t *testing.T, s string) {
	t.Helper()
	if _, err := term.master.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// openPty opens a new pseudo-terminal pair, as posix_openpt, unlockpt and
// ptsname do.
func openPty() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	// SyscallConn rather than Fd: Fd would make master blocking, and a blocked
	// Read could not be interrupted by Close.
	rc, err := master.SyscallConn()
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	var n uint32
	var ioctlErr error
	err = rc.Control(func(fd uintptr) {
		var unlock int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
			ioctlErr = fmt.Errorf("unlockpt: %w", e)
			return
		}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
			ioctlErr = fmt.Errorf("ptsname: %w", e)
		}
	})
	if err == nil {
		err = ioctlErr
	}
	if err == nil {
		slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

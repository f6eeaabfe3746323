package checkpoint

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// proc is one hummer process (serve, jobmanager or taskmanager). Its stderr
// goes to a log file and, line by line, into an in-memory list stamped with
// the time each line reached this process: the recovery measurement reads the
// JobManager's "TaskManager lost" and "job failed" lines from there, on the
// same clock as its kill and its consumers. bench/latency has a launcher of its
// own for `hummer serve`; this one adds the stamped lines and SIGKILL.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // why it exited; read after done is closed
	once sync.Once     // closes log

	mu      sync.Mutex
	lines   []logLine
	changed chan struct{} // a token after each line
}

type logLine struct {
	at   time.Time
	text string
}

// startProc starts bin with args, logging to logPath.
func startProc(name, logPath, bin string, args ...string) (*proc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	cmd.Stdout = log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			at := time.Now()
			fmt.Fprintln(log, sc.Text())
			p.mu.Lock()
			p.lines = append(p.lines, logLine{at, sc.Text()})
			p.mu.Unlock()
			select {
			case p.changed <- struct{}{}:
			default:
			}
		}
		io.Copy(log, stderr)
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// waitLine returns the first line matching re that arrived at or after since,
// with its arrival time; it fails when the process exits or deadline passes.
func (p *proc) waitLine(re *regexp.Regexp, since, deadline time.Time) (logLine, []string, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	seen := 0
	for {
		p.mu.Lock()
		lines := p.lines[seen:]
		seen = len(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			if !l.at.Before(since) {
				if m := re.FindStringSubmatch(l.text); m != nil {
					return l, m, nil
				}
			}
		}
		select {
		case <-p.changed:
		case <-p.done:
			// Lines written just before the exit may still be unread.
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if n > seen {
				continue
			}
			return logLine{}, nil, fmt.Errorf("%s exited (%v) while waiting for a log line matching %q:\n%s", p.name, p.err, re, tail(p.log.Name()))
		case <-timer.C:
			return logLine{}, nil, fmt.Errorf("%s: no log line matching %q within the deadline:\n%s", p.name, re, tail(p.log.Name()))
		}
	}
}

// count returns how many lines matching re arrived at or after since.
func (p *proc) count(re *regexp.Regexp, since time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if !l.at.Before(since) && re.MatchString(l.text) {
			n++
		}
	}
	return n
}

// first returns the arrival of the first line matching re at or after since.
func (p *proc) first(re *regexp.Regexp, since time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if !l.at.Before(since) && re.MatchString(l.text) {
			return l.at, true
		}
	}
	return time.Time{}, false
}

// kill sends SIGKILL and waits for the process to be gone; it returns the
// time just before the signal.
func (p *proc) kill() time.Time {
	at := time.Now()
	p.cmd.Process.Kill()
	<-p.done
	p.once.Do(func() { p.log.Close() })
	return at
}

// freeze sends SIGSTOP; it returns the time just before the signal.
func (p *proc) freeze() time.Time {
	at := time.Now()
	p.cmd.Process.Signal(syscall.SIGSTOP)
	return at
}

// stop ends the process with SIGTERM (SIGKILL after 10 s) and waits for it.
func (p *proc) stop() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	p.once.Do(func() { p.log.Close() })
}

// readyLine is what `hummer serve` and `hummer jobmanager` print once they
// listen for PostgreSQL clients.
var readyLine = regexp.MustCompile(`hummer is ready: psql -h (\S+) -p (\d+)`)

// connect waits for p's ready line and connects to its PostgreSQL frontend
// with pgx over the simple protocol; onNotice receives the server's notices.
func connect(ctx context.Context, p *proc, onNotice func(string)) (*pgx.Conn, error) {
	_, m, err := p.waitLine(readyLine, time.Time{}, time.Now().Add(time.Minute))
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig("postgres://hummer@" + m[1] + ":" + m[2] + "/hummer?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		return nil, err
	}
	if onNotice != nil {
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { onNotice(n.Message) }
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// execAll runs statements whose results do not matter, in order.
func execAll(ctx context.Context, conn *pgx.Conn, stmts ...string) error {
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// job is a continuous job's row of SHOW PROCESSLIST, the columns this
// benchmark reads.
type job struct {
	ID         string
	State      string
	RowsIn     int64
	RowsOut    int64
	Error      string
	Restarts   int64
	Checkpoint int64 // the newest complete checkpoint, 0 for none
	// Of the newest complete checkpoint: trigger to complete, state stored,
	// longest barrier alignment.
	CheckpointMs    float64
	CheckpointBytes int64
	AlignmentMs     float64
	Raw             string
}

// processList runs SHOW PROCESSLIST and returns its rows by job id.
func processList(ctx context.Context, conn *pgx.Conn) (map[string]job, error) {
	rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]job{}
	for rows.Next() {
		var j job
		var raw []string
		for i, v := range rows.RawValues() {
			name, val := string(rows.FieldDescriptions()[i].Name), string(v)
			raw = append(raw, name+"="+val)
			switch name {
			case "id":
				j.ID = val
			case "state":
				j.State = val
			case "rows_in":
				j.RowsIn = atoi(val)
			case "rows_out":
				j.RowsOut = atoi(val)
			case "error":
				j.Error = val
			case "restarts":
				j.Restarts = atoi(val)
			case "checkpoint":
				j.Checkpoint = atoi(val)
			case "checkpoint_ms":
				j.CheckpointMs, _ = strconv.ParseFloat(val, 64)
			case "checkpoint_bytes":
				j.CheckpointBytes = atoi(val)
			case "alignment_ms":
				j.AlignmentMs, _ = strconv.ParseFloat(val, 64)
			}
		}
		j.Raw = strings.Join(raw, " ")
		out[j.ID] = j
	}
	return out, rows.Err()
}

// jobStarted reads the id from the notice an INSERT job's start sends.
var jobStarted = regexp.MustCompile(`^job (\d+) started`)

// tail returns the end of a log file, for an error message that outlives the file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	return string(b[max(0, len(b)-3000):])
}

// atoi reads a number column; NULL (empty) reads as 0.
func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

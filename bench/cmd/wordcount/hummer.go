package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hummer-db/hummer/bench/counts"
)

// hummerServer is one `hummer serve` process and a pgx connection to it, used the way
// a user would: SQL over the PostgreSQL wire protocol, simple query protocol.
type hummerServer struct {
	cmd  *exec.Cmd
	conn *pgx.Conn
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // why it exited; read after done is closed
}

// readyLine is what `hummer serve` prints once it listens.
var readyLine = regexp.MustCompile(`hummer is ready: psql -h (\S+) -p (\d+)`)

// startHummer starts `bin serve` on a free loopback port with a fresh data
// directory under dir, and connects to it. The server's log goes to dir/hummer.log.
func startHummer(ctx context.Context, bin, dir string) (*hummerServer, error) {
	log, err := os.Create(dir + "/hummer.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--pg-addr", "127.0.0.1:0", "--data-dir", dir+"/hummer-data")
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
	s := &hummerServer{cmd: cmd, log: log, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1] + ":" + m[2]:
				default:
				}
			}
		}
		io.Copy(log, stderr)
		s.err = cmd.Wait()
		close(s.done)
	}()
	var hostPort string
	select {
	case hostPort = <-addr:
	case <-s.done:
		return nil, fmt.Errorf("hummer serve exited before it was ready (%v):\n%s", s.err, tail(log.Name()))
	case <-time.After(time.Minute):
		s.Close()
		return nil, fmt.Errorf("hummer serve not ready after a minute:\n%s", tail(log.Name()))
	}
	s.conn, err = pgx.Connect(ctx, "postgres://hummer@"+hostPort+"/hummer?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close ends the server and waits for it.
func (s *hummerServer) Close() error {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	return s.log.Close()
}

// exec runs a statement whose result does not matter.
func (s *hummerServer) exec(ctx context.Context, sql string) error {
	_, err := s.conn.Exec(ctx, sql)
	return err
}

// run runs query at the given parallelism and measures it: wall time at the client
// until the last row arrived, and the server process's CPU time and peak RSS across
// the query. It digests every (word, count) row received.
func (s *hummerServer) run(ctx context.Context, parallelism int, query string) (measurement, counts.Digest, error) {
	var m measurement
	var d counts.Digest
	if err := s.exec(ctx, fmt.Sprintf("SET parallelism = %d", parallelism)); err != nil {
		return m, d, err
	}
	pid := s.cmd.Process.Pid
	if err := resetPeakRSS(pid); err != nil {
		return m, d, fmt.Errorf("resetting the server's peak RSS: %w", err)
	}
	rssBefore, _, err := procMem(pid)
	if err != nil {
		return m, d, err
	}
	cpu0, err := procCPU(pid)
	if err != nil {
		return m, d, err
	}
	t0 := time.Now()
	rows, err := s.conn.Query(ctx, query)
	if err != nil {
		return m, d, err
	}
	var word string
	var n int64
	for rows.Next() {
		if err := rows.Scan(&word, &n); err != nil {
			rows.Close()
			return m, d, err
		}
		d.Add(word, n)
	}
	rows.Close()
	m.Wall = time.Since(t0)
	if err := rows.Err(); err != nil {
		return m, d, err
	}
	cpu1, err := procCPU(pid)
	if err != nil {
		return m, d, err
	}
	_, peak, err := procMem(pid)
	if err != nil {
		return m, d, err
	}
	m.CPU, m.PeakRSS, m.RSSBefore = cpu1-cpu0, peak, rssBefore
	return m, d, nil
}

// createTable declares table over the text file at path.
func (s *hummerServer) createTable(ctx context.Context, table, path string) error {
	if strings.ContainsAny(path, "'?") {
		return errors.New("input path holds ' or ?: " + path)
	}
	return s.exec(ctx, fmt.Sprintf("CREATE TABLE %s (line TEXT) ENGINE=file CONNECTION='file://%s'", table, path))
}

// tail returns the end of a log file, for an error message that outlives the file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	return string(b[max(0, len(b)-2000):])
}

package latency

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// server is one `hummer serve` process and a pgx connection to it. It repeats a
// little of bench/cmd/wordcount's launcher, which lives in a main package.
type server struct {
	cmd  *exec.Cmd
	log  *os.File
	conn *pgx.Conn
	done chan struct{} // closed when the process has exited
	err  error         // why it exited; read after done is closed
}

// readyLine is what `hummer serve` prints once it listens.
var readyLine = regexp.MustCompile(`hummer is ready: psql -h (\S+) -p (\d+)`)

// startServer starts `bin serve` on a free loopback port with a fresh data
// directory, dir/latency-data, logging to dir/latency-hummer.log, and connects
// to it.
func startServer(ctx context.Context, bin, dir string) (*server, error) {
	logPath := filepath.Join(dir, "latency-hummer.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "latency-data")
	if err := os.RemoveAll(data); err != nil { // a catalog left by an earlier run would hold the tables
		log.Close()
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--pg-addr", "127.0.0.1:0", "--data-dir", data)
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
	s := &server{cmd: cmd, log: log, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m[1] + ":" + m[2]:
				default:
				}
			}
		}
		io.Copy(log, stderr)
		s.err = cmd.Wait()
		close(s.done)
	}()
	select {
	case addr := <-ready:
		s.conn, err = pgx.Connect(ctx, "postgres://hummer@"+addr+"/hummer?sslmode=disable&default_query_exec_mode=simple_protocol")
		if err != nil {
			s.close()
			return nil, err
		}
		return s, nil
	case <-s.done:
		log.Close()
		return nil, fmt.Errorf("hummer serve exited before it was ready (%v):\n%s", s.err, tail(logPath))
	case <-time.After(time.Minute):
		s.close()
		return nil, fmt.Errorf("hummer serve not ready after a minute:\n%s", tail(logPath))
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// exec runs statements whose results do not matter, in order.
func (s *server) exec(ctx context.Context, stmts ...string) error {
	for _, q := range stmts {
		if _, err := s.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// rows runs a query and returns each row as name=value pairs, separated by
// spaces; the simple protocol sends every value as text.
func (s *server) rows(ctx context.Context, q string) ([]string, error) {
	rows, err := s.conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cols []string
		for i, v := range rows.RawValues() {
			cols = append(cols, string(rows.FieldDescriptions()[i].Name)+"="+string(v))
		}
		out = append(out, strings.Join(cols, " "))
	}
	return out, rows.Err()
}

// exited reports whether the process has exited, and why.
func (s *server) exited() (bool, error) {
	select {
	case <-s.done:
		return true, s.err
	default:
		return false, nil
	}
}

// close ends the process with SIGTERM (SIGKILL after 10 s) and waits for it.
func (s *server) close() error {
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

// tail returns the end of a log file, for an error message that outlives the file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	return string(b[max(0, len(b)-2000):])
}

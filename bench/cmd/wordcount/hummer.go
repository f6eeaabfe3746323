package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hummer-db/hummer/bench/counts"
)

// hummerServer is a Hummer deployment and a pgx connection to it, used the way a user
// would: SQL over the PostgreSQL wire protocol, simple query protocol. It is either
// one `hummer serve` process, or a cluster of one `hummer jobmanager` and some `hummer
// taskmanager` processes; procs[0] is the one serving PostgreSQL.
type hummerServer struct {
	procs []*proc
	conn  *pgx.Conn
	// notice is the message of the last notice the server sent (an INSERT
	// INTO a connector table names its job in one).
	notice string
}

// proc is one hummer process; its stdout and stderr go to its log file.
type proc struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // why it exited; read after done is closed
}

var (
	// readyLine is what `hummer serve` and `hummer jobmanager` print once they listen.
	readyLine = regexp.MustCompile(`hummer is ready: psql -h (\S+) -p (\d+)`)
	// rpcLine is the JobManager's log line with its control-plane address.
	rpcLine = regexp.MustCompile(`msg="jobmanager accepting TaskManagers" rpc-addr=(\S+)`)
)

// startProc starts bin with args, logging to logPath, and waits until every one of
// wait has matched a line the process wrote to stderr; it returns the submatches of
// each, in the order of wait.
func startProc(bin, logPath string, wait []*regexp.Regexp, args ...string) (*proc, [][]string, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	cmd.Stdout = log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, err
	}
	p := &proc{cmd: cmd, log: log, done: make(chan struct{})}
	matched := make(chan [][]string, 1)
	go func() {
		found, left := make([][]string, len(wait)), len(wait)
		if left == 0 {
			matched <- found
		}
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			for i, re := range wait {
				if m := re.FindStringSubmatch(sc.Text()); m != nil && found[i] == nil {
					found[i] = m
					if left--; left == 0 {
						matched <- found
					}
				}
			}
		}
		io.Copy(log, stderr)
		p.err = cmd.Wait()
		close(p.done)
	}()
	name := strings.Join(append([]string{filepath.Base(bin)}, args[:1]...), " ")
	select {
	case m := <-matched:
		return p, m, nil
	case <-p.done:
		log.Close()
		return nil, nil, fmt.Errorf("%s exited before it was ready (%v):\n%s", name, p.err, tail(logPath))
	case <-time.After(time.Minute):
		p.close()
		return nil, nil, fmt.Errorf("%s not ready after a minute:\n%s", name, tail(logPath))
	}
}

// close ends the process with SIGTERM (SIGKILL after 10 s) and waits for it.
func (p *proc) close() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	return p.log.Close()
}

// startHummer starts `bin serve` on a free loopback port with a fresh data directory
// under dir and connects to it; slots > 0 sets --slots (otherwise one per core), and
// extra are more flags. The server's log goes to dir/NAME.log.
func startHummer(ctx context.Context, bin, dir, name string, slots int, extra ...string) (*hummerServer, error) {
	args := []string{"serve", "--pg-addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, name+"-data")}
	if slots > 0 {
		args = append(args, "--slots", strconv.Itoa(slots))
	}
	args = append(args, extra...)
	p, m, err := startProc(bin, filepath.Join(dir, name+".log"), []*regexp.Regexp{readyLine}, args...)
	if err != nil {
		return nil, err
	}
	s := &hummerServer{procs: []*proc{p}}
	if err := s.connect(ctx, m[0][1]+":"+m[0][2]); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// startCluster starts `bin jobmanager` and tms `bin taskmanager --slots 1`, all on
// loopback with free ports, connects to the JobManager and waits until the
// TaskManagers have registered: until `SET parallelism = tms` succeeds, which it does
// not while fewer slots exist. Logs go to dir/NAME-jm.log and dir/NAME-tmI.log.
func startCluster(ctx context.Context, bin, dir, name string, tms int) (*hummerServer, error) {
	jm, m, err := startProc(bin, filepath.Join(dir, name+"-jm.log"), []*regexp.Regexp{rpcLine, readyLine},
		"jobmanager", "--pg-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, name+"-jm-data"))
	if err != nil {
		return nil, err
	}
	s := &hummerServer{procs: []*proc{jm}}
	rpcAddr, pgAddr := m[0][1], m[1][1]+":"+m[1][2]
	for i := range tms {
		tm, _, err := startProc(bin, filepath.Join(dir, fmt.Sprintf("%s-tm%d.log", name, i)), nil,
			"taskmanager", "--jobmanager", rpcAddr, "--slots", "1", "--data-addr", "127.0.0.1:0",
			"--data-dir", filepath.Join(dir, fmt.Sprintf("%s-tm%d-data", name, i)))
		if err != nil {
			s.Close()
			return nil, err
		}
		s.procs = append(s.procs, tm)
	}
	if err := s.connect(ctx, pgAddr); err != nil {
		s.Close()
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := s.exec(ctx, fmt.Sprintf("SET parallelism = %d", tms))
		if err == nil {
			return s, nil
		}
		for _, p := range s.procs {
			select {
			case <-p.done:
				s.Close()
				return nil, fmt.Errorf("%s exited (%v) before %d TaskManagers registered:\n%s", p.cmd.Args[1], p.err, tms, tail(p.log.Name()))
			default:
			}
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("%d TaskManagers not registered after a minute (SET parallelism = %d: %v):\n%s", tms, tms, err, tail(jm.log.Name()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *hummerServer) connect(ctx context.Context, hostPort string) error {
	cc, err := pgx.ParseConfig("postgres://hummer@" + hostPort + "/hummer?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		return err
	}
	cc.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { s.notice = n.Message }
	s.conn, err = pgx.ConnectConfig(ctx, cc)
	return err
}

// pids returns the process ids of the deployment, PostgreSQL's first.
func (s *hummerServer) pids() []int {
	var ids []int
	for _, p := range s.procs {
		ids = append(ids, p.cmd.Process.Pid)
	}
	return ids
}

// Close ends the deployment's processes, TaskManagers before the JobManager, and
// waits for them.
func (s *hummerServer) Close() error {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
	var errs []error
	for i := len(s.procs) - 1; i >= 0; i-- {
		errs = append(errs, s.procs[i].close())
	}
	return errors.Join(errs...)
}

// exec runs a statement whose result does not matter.
func (s *hummerServer) exec(ctx context.Context, sql string) error {
	_, err := s.conn.Exec(ctx, sql)
	return err
}

// run runs query at the given parallelism and measures it (measure), digesting
// every (word, count) row received.
func (s *hummerServer) run(ctx context.Context, parallelism int, query string) (measurement, counts.Digest, error) {
	var d counts.Digest
	if err := s.exec(ctx, fmt.Sprintf("SET parallelism = %d", parallelism)); err != nil {
		return measurement{}, d, err
	}
	// The clock runs while the rows arrive; they are kept as received (text
	// format) and digested after it stops, as the other contenders' output
	// is: digesting in the loop cost the client some 200 ns a row, more than
	// the server spends sending it, and it was the client that the last rows
	// waited for.
	raw := make([]byte, 0, 1<<20)
	ends := make([]int, 0, 1<<17) // where each value ends in raw; -1 for NULL
	m, err := s.measure(func() error {
		rows, err := s.conn.Query(ctx, query)
		if err != nil {
			return err
		}
		for rows.Next() {
			for _, v := range rows.RawValues() {
				if v == nil {
					ends = append(ends, -1)
					continue
				}
				raw = append(raw, v...)
				ends = append(ends, len(raw))
			}
		}
		rows.Close()
		return rows.Err()
	})
	if err != nil {
		return m, d, err
	}
	return m, d, digestRows(raw, ends, &d)
}

// measure runs query, which talks to the deployment, and measures it: its wall
// time, and the CPU time and peak RSS of the deployment's processes across it,
// each summed over them.
func (s *hummerServer) measure(query func() error) (measurement, error) {
	var m measurement
	pids := s.pids()
	for _, pid := range pids {
		if err := resetPeakRSS(pid); err != nil {
			return m, fmt.Errorf("resetting the peak RSS of process %d: %w", pid, err)
		}
	}
	rssBefore, _, err := sumMem(pids)
	if err != nil {
		return m, err
	}
	cpu0, err := sumCPU(pids)
	if err != nil {
		return m, err
	}
	t0 := time.Now()
	if err := query(); err != nil {
		return m, err
	}
	m.Wall = time.Since(t0)
	cpu1, err := sumCPU(pids)
	if err != nil {
		return m, err
	}
	_, peak, err := sumMem(pids)
	if err != nil {
		return m, err
	}
	m.CPU, m.PeakRSS, m.RSSBefore = cpu1-cpu0, peak, rssBefore
	return m, nil
}

// digestRows folds into d the (word, count) rows run received: raw holds their
// values one after another, and ends where each ends (-1 for a NULL).
func digestRows(raw []byte, ends []int, d *counts.Digest) error {
	if len(ends)%2 != 0 {
		return fmt.Errorf("%d values received, not rows of 2", len(ends))
	}
	start := 0
	value := func(i int) ([]byte, error) {
		if ends[i] < 0 {
			return nil, fmt.Errorf("row %d: a NULL", i/2)
		}
		v := raw[start:ends[i]]
		start = ends[i]
		return v, nil
	}
	for i := 0; i < len(ends); i += 2 {
		word, err := value(i)
		if err != nil {
			return err
		}
		count, err := value(i + 1)
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(string(count), 10, 64)
		if err != nil {
			return fmt.Errorf("row %d: count %q: %w", i/2, count, err)
		}
		d.Add(string(word), n)
	}
	return nil
}

// analysis is what EXPLAIN ANALYZE reports of one run of a query.
type analysis struct {
	Tasks        int      `json:"tasks"`
	TaskManagers []string `json:"task_managers"` // distinct, in order of appearance
	RowsIn       int64    `json:"rows_in"`       // over all tasks
	NetBytesOut  int64    `json:"net_bytes_out"` // over all tasks
	Channels     string   `json:"channels"`      // its per-edge lines, e.g. "V0 -> V1 input=0 hash[0]: 9 channel(s), 6 over the network"
}

// analyze runs EXPLAIN ANALYZE query at the given parallelism and sums what its
// tasks report.
func (s *hummerServer) analyze(ctx context.Context, parallelism int, query string) (analysis, error) {
	if err := s.exec(ctx, fmt.Sprintf("SET parallelism = %d", parallelism)); err != nil {
		return analysis{}, err
	}
	rows, err := s.conn.Query(ctx, "EXPLAIN ANALYZE "+query)
	if err != nil {
		return analysis{}, err
	}
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return analysis{}, err
		}
		lines = append(lines, line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return analysis{}, err
	}
	return parseAnalysis(lines)
}

// parseAnalysis reads EXPLAIN ANALYZE's task lines (`... tm=ADDR rows_in=N rows_out=N
// net_bytes_out=N`) and its ExecutionGraph's channel counts.
func parseAnalysis(lines []string) (analysis, error) {
	var a analysis
	var channels []string
	inExec := false
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if t == "ExecutionGraph" {
			inExec = true
			continue
		}
		if inExec && strings.Contains(t, " over the network") {
			channels = append(channels, t)
		}
		if !strings.Contains(t, " tm=") {
			continue
		}
		a.Tasks++
		for _, f := range strings.Fields(t) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "tm":
				if !slices.Contains(a.TaskManagers, v) {
					a.TaskManagers = append(a.TaskManagers, v)
				}
			case "rows_in":
				a.RowsIn += n
			case "net_bytes_out":
				a.NetBytesOut += n
			}
		}
	}
	if a.Tasks == 0 {
		return a, fmt.Errorf("EXPLAIN ANALYZE shows no task with tm=:\n%s", strings.Join(lines, "\n"))
	}
	a.Channels = strings.Join(channels, "; ")
	return a, nil
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

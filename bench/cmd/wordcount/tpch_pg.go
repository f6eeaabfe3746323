package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The TPC-H suite's PostgreSQL: a server of its own, started from Debian's
// binaries in a fresh data directory, and the pgx helper both it and Hummer
// answer through.

// postgres is a PostgreSQL server the suite started, and a connection to it.
type postgres struct {
	proc      *proc
	conn      *pgx.Conn
	dataDir   string
	socketDir string // its Unix socket's directory; the port is port
	port      int
	version   string
}

func (p *postgres) close() {
	if p.conn != nil {
		p.conn.Close(context.Background())
	}
	if p.proc != nil {
		p.proc.close()
	}
	if p.dataDir != "" {
		os.RemoveAll(p.dataDir)
	}
}

// pgReady is what the postmaster logs once it accepts connections.
var pgReady = regexp.MustCompile(`database system is ready to accept connections`)

// tpchKeys are the tables' primary keys, which the PostgreSQL contender has
// (TPC-H allows them; the others have none).
var tpchKeys = map[string]string{
	"region": "r_regionkey", "nation": "n_nationkey", "supplier": "s_suppkey", "customer": "c_custkey",
	"part": "p_partkey", "partsupp": "ps_partkey, ps_suppkey", "orders": "o_orderkey", "lineitem": "l_orderkey, l_linenumber",
}

// startPostgres starts a server (newPostgres) for the tpch suite, without
// durability (fsync off: the suite times queries, not commits), loads the
// tables through COPY FROM STDIN, adds their primary keys and analyses them.
func startPostgres(ctx context.Context, bin, work string, tables []tpchTable, rep *tpchReport) (*postgres, error) {
	pg, err := newPostgres(ctx, bin, work, 5479, "shared_buffers=2GB", "work_mem=256MB", "maintenance_work_mem=1GB", "fsync=off",
		"synchronous_commit=off", "full_page_writes=off", "max_wal_size=8GB")
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for _, t := range tables {
		progress("tpch: loading %s into PostgreSQL", t.name)
		if _, err := pg.conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (%s)", t.name, t.columns)); err != nil {
			pg.close()
			return nil, err
		}
		f, err := os.Open(t.path)
		if err != nil {
			pg.close()
			return nil, err
		}
		_, err = pg.conn.PgConn().CopyFrom(ctx, f, fmt.Sprintf("COPY %s FROM STDIN WITH (FORMAT csv, HEADER true)", t.name))
		f.Close()
		if err != nil {
			pg.close()
			return nil, fmt.Errorf("COPY %s: %w", t.name, err)
		}
		if _, err := pg.conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD PRIMARY KEY (%s)", t.name, tpchKeys[t.name])); err != nil {
			pg.close()
			return nil, err
		}
	}
	if _, err := pg.conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		pg.close()
		return nil, err
	}
	rep.LoadS[nameTPCHPostgres] = round(time.Since(t0).Seconds(), 1)
	return pg, nil
}

// newPostgres runs initdb and postgres from bin (as the user postgres when
// this runs as root, since PostgreSQL refuses root) on a Unix socket in a
// fresh directory, listening on port, with the settings given (name=value),
// and connects.
func newPostgres(ctx context.Context, bin, work string, port int, settings ...string) (*postgres, error) {
	initdb, err := pgBinary(bin, "initdb")
	if err != nil {
		return nil, err
	}
	server, err := pgBinary(bin, "postgres")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hummer-bench-pg-")
	if err != nil {
		return nil, err
	}
	pg := &postgres{dataDir: dir, socketDir: dir}
	as := func(prog string, args ...string) (string, []string) { return prog, args }
	if os.Geteuid() == 0 {
		if err := exec.Command("chown", "postgres:postgres", dir).Run(); err != nil {
			pg.close()
			return nil, fmt.Errorf("chown postgres %s: %w (PostgreSQL runs as the user postgres when the benchmark runs as root)", dir, err)
		}
		as = func(prog string, args ...string) (string, []string) {
			return "runuser", append([]string{"-u", "postgres", "--", prog}, args...)
		}
	}
	data := filepath.Join(dir, "data")
	prog, args := as(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C")
	if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil {
		pg.close()
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	pg.port = port
	serverArgs := []string{"-D", data, "-k", dir, "-p", strconv.Itoa(port), "-c", "listen_addresses="}
	for _, kv := range settings {
		serverArgs = append(serverArgs, "-c", kv)
	}
	prog, args = as(server, serverArgs...)
	p, _, err := startProc(prog, filepath.Join(work, "postgres.log"), []*regexp.Regexp{pgReady}, args...)
	if err != nil {
		pg.close()
		return nil, err
	}
	pg.proc = p
	if pg.conn, err = pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres default_query_exec_mode=simple_protocol", dir, port)); err != nil {
		pg.close()
		return nil, err
	}
	if err := pg.conn.QueryRow(ctx, "SELECT version()").Scan(&pg.version); err != nil {
		pg.close()
		return nil, err
	}
	pg.version, _, _ = strings.Cut(pg.version, " on ")
	return pg, nil
}

// pgBinary names one of PostgreSQL's programs in dir.
func pgBinary(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("PostgreSQL's %s is not at %s (apt-get install postgresql-15, or -pg-bin): %w", name, path, err)
	}
	return path, nil
}

// pgxRows runs q's statements on *conn (simple protocol: values as text) and
// returns the query's rows, normalised. The server ends a statement past
// timeout (statement_timeout, which Hummer and PostgreSQL both have), so the
// connection stays usable; should the client's own deadline, a minute later,
// close it anyway, pgxRows opens another with the same configuration.
func pgxRows(ctx context.Context, conn **pgx.Conn, q tpchQuery, timeout time.Duration) ([]string, error) {
	c := *conn
	if c.IsClosed() {
		fresh, err := pgx.ConnectConfig(ctx, c.Config())
		if err != nil {
			return nil, err
		}
		*conn, c = fresh, fresh
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	if _, err := c.Exec(ctx, fmt.Sprintf("SET statement_timeout = %d", timeout.Milliseconds())); err != nil {
		return nil, err
	}
	var out []string
	for i, s := range q.Stmts {
		if i != q.Query {
			if _, err := c.Exec(ctx, s); err != nil {
				return nil, err
			}
			continue
		}
		rows, err := c.Query(ctx, s)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			raw := rows.RawValues()
			text := make([]string, len(raw))
			for j, v := range raw {
				if v == nil {
					text[j] = "NULL"
				} else {
					text[j] = string(v)
				}
			}
			out = append(out, normRow(text))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Package socket is the socket connector: an unbounded source that reads lines
// of text from a TCP server, as Flink's socketTextStream does for the classic
// WordCount over `nc -lk 9999`.
//
//	CREATE TABLE lines_in (line TEXT) ENGINE=socket CONNECTION='socket://localhost:9999';
//	CREATE TABLE clicks (id BIGINT, url TEXT) ENGINE=socket
//	  CONNECTION='socket://localhost:9999?format=csv';
//
// The source connects to host:port and emits each line (without its newline,
// a trailing \r dropped) as a row: format=text takes it as the table's single
// TEXT column, format=csv as one RFC 4180 record (columns by position),
// format=json as one object (fields by column name), as the Kafka connector
// reads a message value (connectors/internal/records). A line the format
// cannot parse, or one longer than maxLineBytes, is counted as a bad record
// and skipped; it never fails the job. A last line the server closes the
// connection on without a newline is a line too.
//
// A socket is one stream: subtask 0 of the source connects and the others
// emit nothing (MaxParallelism says 1, for the day the planner caps a
// source's parallelism by its connector; it does not yet). While the server is not there, or after it closed the
// connection, the source connects again with backoff (100ms doubling to 5s),
// with the state in the task's status (SHOW PROCESSLIST), until the job is
// cancelled.
//
// The source is not checkpointed: a socket cannot be rewound, so a job
// restarted from a checkpoint (a failover, a server restart) connects again
// and reads what the server sends from then on. The lines the server sent
// that the job had not yet taken into a completed checkpoint are lost, as
// with Flink's socket source; delivery is at most once.
package socket

import (
	"net"
	"net/url"
	"strconv"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// Name is the connector's ENGINE name.
const Name = "socket"

// Formats of the format option.
const (
	FormatText = records.FormatText
	FormatCSV  = records.FormatCSV
	FormatJSON = records.FormatJSON
)

// Spec describes the socket connector and its options.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "socket://host:port[?format=text|csv|json]",
		Description: "Reads lines from a TCP server (unbounded source, one subtask; reconnects with backoff; not checkpointed: a restart loses the lines in flight).",
		Source:      true,
		Unbounded:   true,
		Options: []spec.Option{
			{Name: "format", Type: spec.Enum, Default: FormatText, Allowed: []string{FormatText, FormatCSV, FormatJSON},
				Description: "text: each line is one row of the table's single TEXT column; " +
					"csv: one RFC 4180 record per line, columns by position, an empty unquoted field is NULL; " +
					"json: one object per line, fields by column name (case-insensitive), a missing field is NULL."},
		},
	}
}

// Register adds the socket source to r. The connector has no sink.
func Register(r *exec.Registry) {
	r.RegisterSource(Name, func(c exec.ConnectorSpec) (exec.Source, error) {
		cfg, err := parse(c)
		if err != nil {
			return nil, err
		}
		return newSource(cfg), nil
	})
}

// Validate checks a socket table at CREATE TABLE time: a host and port in the
// URL, its options, and that the table's columns suit the format. It does not
// connect. Errors wrap spec.ErrBadOption.
func Validate(c exec.ConnectorSpec) error {
	_, err := parse(c)
	return err
}

// MaxParallelism is 1: a socket is one stream.
func MaxParallelism(exec.ConnectorSpec) int { return 1 }

// config is a validated socket table.
type config struct {
	addr   string // host:port
	format string
	schema types.Schema // the table's columns
	cols   []int        // the positions in schema the source emits, in order
}

func parse(c exec.ConnectorSpec) (config, error) {
	s := Spec()
	u, err := url.Parse(c.URL)
	if err != nil {
		return config{}, s.Errorf("bad URL %q: %v (want %s)", c.URL, err, s.URL)
	}
	switch {
	case u.Scheme != "socket":
		return config{}, s.Errorf("URL %q: scheme must be socket (want %s)", c.URL, s.URL)
	case u.Opaque != "":
		return config{}, s.Errorf("URL %q: want %s", c.URL, s.URL)
	case u.User != nil:
		return config{}, s.Errorf("URL %q: user information is not allowed", c.URL)
	case u.Fragment != "":
		return config{}, s.Errorf("URL %q: a fragment is not allowed", c.URL)
	case u.Path != "" && u.Path != "/":
		return config{}, s.Errorf("URL %q: a path is not allowed (want %s)", c.URL, s.URL)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return config{}, s.Errorf("URL %q: want a host and a port, as in socket://localhost:9999", c.URL)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return config{}, s.Errorf("URL %q: port %q is not a TCP port (1 to 65535)", c.URL, port)
	}
	q, err := spec.ParseQuery(u.RawQuery)
	if err != nil {
		return config{}, err
	}
	opts, err := s.Parse(q)
	if err != nil {
		return config{}, err
	}
	cfg := config{addr: net.JoinHostPort(host, port), format: opts.Get("format"), schema: c.Schema}
	if len(c.Key) > 0 {
		return config{}, s.Errorf("a socket table takes no PRIMARY KEY: its lines are appended rows, not upserts")
	}
	if err := records.CheckSchema(s, cfg.format, c.Schema); err != nil {
		return config{}, err
	}
	if cfg.cols, err = records.Columns(c); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// Package file is the file connector: a bounded source that reads one local file, or
// the part files of a directory, as lines of text, CSV records or JSON objects (one
// per line), and a sink that writes a directory of part files exactly once.
//
//	CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file:///data/kjv.txt';
//	CREATE TABLE t (id BIGINT, name TEXT) ENGINE=file
//	  CONNECTION='file:///data/t.csv?format=csv&header=true';
//	CREATE TABLE out (id BIGINT, name TEXT, dt TEXT) ENGINE=file
//	  CONNECTION='file:///data/out/?format=csv&partition_by=dt';
//
// A path that ends with "/" names a directory table (dir.go, sink.go): the sink
// writes part files into it, in Hive-style partition directories with
// partition_by, and the source reads every committed part file under it. A path
// without the "/" names one file, which the sink does not write.
//
// Validate checks only the URL and options. Where the tasks that read the
// table run in the process that creates it (hummer serve, hummer sql),
// CREATE TABLE also checks the file with CheckFile, so that a table over a
// missing file is refused at once (58P01); a JobManager, whose TaskManagers
// hold the files, cannot. A source that cannot read its file (removed since)
// fails at Open.
//
// Parallel reading: subtask i of n reads the lines that start in the byte range
// (i*size/n, (i+1)*size/n] (subtask 0 also the line at offset 0), so every line is
// read by exactly one subtask whatever n is. In a job without checkpoints the
// subtasks that run in one TaskManager share their ranges instead, piece by
// piece (rangeQueue), so that one slowed by a busy core leaves more to the
// others. CSV differs: a quoted field may hold a newline, so a byte offset
// cannot tell where a record starts without reading everything before it. A
// CSV subtask counts the quotes before its range (far faster than parsing
// them) to find its first record, and reads its own range; with bad_rows=skip
// and in jobs with checkpoints, subtask 0 reads the whole file and the others
// emit nothing.
//
// Reading: blocks of 1 MiB by position (lines.go). On Linux a block that the page
// cache holds is read by a system call the Go scheduler does not see
// (fileread_linux.go), because a task copying cached bytes is computing, not
// waiting, and the scheduler's reaction to a long call cost parallel jobs dearly.
package file

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// Name is the connector's ENGINE name.
const Name = "file"

// Formats of the format option.
const (
	FormatText = records.FormatText
	FormatCSV  = records.FormatCSV
	FormatJSON = records.FormatJSON
)

// Values of the bad_rows option.
const (
	BadRowsFail = "fail"
	BadRowsSkip = "skip"
)

// Spec describes the file connector and its options.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "file:///absolute/path[/][?format=text|csv|json&header=true|false&delimiter=,&bad_rows=fail|skip&partition_by=col,col]",
		Description: "Reads a local file, or the part files of a directory (a path ending in /): lines of text, CSV records or one JSON object per line (bounded source); writes a directory's part files exactly once (sink).",
		Source:      true,
		Sink:        true,
		Options: []spec.Option{
			{Name: "format", Type: spec.Enum, Default: FormatText, Allowed: []string{FormatText, FormatCSV, FormatJSON},
				Description: "text: each line is one row of the table's single TEXT column; " +
					"csv: RFC 4180 records, columns by position, an empty unquoted field is NULL; " +
					"json: one object per line, fields by column name (case-insensitive), a missing field is NULL."},
			{Name: "header", Type: spec.Bool, Default: "false",
				Description: "format=csv only: the first record of a file is a header and is skipped; the sink writes one at the start of each file."},
			{Name: "delimiter", Type: spec.Char, Default: ",",
				Description: `format=csv only: the field delimiter, one single-byte character (\t or tab for a tab).`},
			{Name: "bad_rows", Type: spec.Enum, Default: BadRowsFail, Allowed: []string{BadRowsFail, BadRowsSkip},
				Description: "fail: a malformed row (in any column, read or not) fails the query, naming the file, the line and the fault, " +
					"as PostgreSQL's COPY does; skip: it is counted and skipped, and the client is told how many and the first."},
			{Name: "partition_by", Type: spec.String,
				Description: "directory tables only: the sink writes each row under directories col=value/... of these columns' values " +
					"(comma-separated column names, Hive style, as Flink's filesystem connector's PARTITIONED BY); the files still hold every column."},
		},
	}
}

// Register adds the file source and sink to r.
func Register(r *exec.Registry) {
	r.RegisterSource(Name, func(c exec.ConnectorSpec) (exec.Source, error) {
		cfg, err := parseConfig(c)
		if err != nil {
			return nil, err
		}
		if cfg.dir {
			return newDirSource(cfg), nil
		}
		return newSource(cfg), nil
	})
	r.RegisterSink(Name, func(c exec.ConnectorSpec) (exec.Operator, error) {
		cfg, err := parseConfig(c)
		if err != nil {
			return nil, err
		}
		return newSink(cfg)
	})
}

// Validate checks a file table at CREATE TABLE time: the URL's shape (file:// and an
// absolute path), its options, and that the table's columns suit the format. It does
// not look at the file. Errors wrap spec.ErrBadOption.
func Validate(c exec.ConnectorSpec) error {
	_, err := parseConfig(c)
	return err
}

// CheckFile checks that a valid file table's file can be read by this
// process: it opens, and is a regular file. The error has PostgreSQL's
// SQLSTATE for the fault (58P01 for a missing file, 42501 for one it may not
// read, 42809 for a directory or device) and wraps exec.ErrBadInput and the
// cause. A directory table's path must be a directory, or not there yet (the
// sink makes it; the source reads it as empty).
func CheckFile(c exec.ConnectorSpec) error {
	cfg, err := parseConfig(c)
	if err != nil {
		return err
	}
	if cfg.dir {
		return checkDir(cfg.path)
	}
	f, err := os.Open(cfg.path)
	if err != nil {
		code := "58030" // io_error
		switch {
		case errors.Is(err, fs.ErrNotExist):
			code = "58P01" // undefined_file
		case errors.Is(err, fs.ErrPermission):
			code = "42501" // insufficient_privilege
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &fileError{code: code, err: err,
			msg: fmt.Sprintf("could not open file \"%s\" for reading: %s", cfg.path, strerror(err))}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return &fileError{code: "58030", err: err, msg: fmt.Sprintf("could not stat file \"%s\": %s", cfg.path, strerror(err))}
	}
	if !st.Mode().IsRegular() {
		return &fileError{code: "42809", err: errors.New("not a regular file"),
			msg: fmt.Sprintf("\"%s\" is not a regular file: a file table reads one file (end the path with / for a directory of part files)", cfg.path)}
	}
	return nil
}

// strerror writes a system error as PostgreSQL's messages quote strerror:
// capitalised ("No such file or directory").
func strerror(err error) string {
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// fileError is CheckFile's error: a message as PostgreSQL words it, with its
// SQLSTATE.
type fileError struct {
	code, msg string
	err       error
}

func (e *fileError) Error() string    { return e.msg }
func (e *fileError) SQLState() string { return e.code }
func (e *fileError) Unwrap() []error  { return []error{exec.ErrBadInput, e.err} }

// MaxParallelism returns the most subtasks that can share the reading of a file
// table: 1 for a file in format=csv with bad_rows=skip, whose subtask 0 reads
// everything (see the package doc), 0 (no limit) otherwise (a directory's
// subtasks share its files). A bad spec gives 0; Validate
// reports it.
func MaxParallelism(c exec.ConnectorSpec) int {
	if cfg, err := parseConfig(c); err == nil && cfg.format == FormatCSV && cfg.skipBad && !cfg.dir {
		return 1
	}
	return 0
}

// config is a validated file table.
type config struct {
	path string
	// dir says the path names a directory of part files (it ends with "/",
	// which path does not keep).
	dir    bool
	format string
	header bool
	delim  byte
	schema types.Schema // the table's columns
	cols   []int        // the positions in schema to emit, in order
	// skipBad says malformed rows are counted and skipped (bad_rows=skip),
	// not the query's failure.
	skipBad bool
	// partition are the positions in schema of the partition_by columns.
	partition []int
}

func parseConfig(c exec.ConnectorSpec) (config, error) {
	s := Spec()
	u, err := url.Parse(c.URL)
	if err != nil {
		return config{}, s.Errorf("bad URL %q: %v (want %s)", c.URL, err, s.URL)
	}
	switch {
	case u.Scheme != "file":
		return config{}, s.Errorf("URL %q: scheme must be file (want %s)", c.URL, s.URL)
	case u.Opaque != "" || u.Host != "" && u.Host != "localhost":
		return config{}, s.Errorf("URL %q: the path must be absolute, as in file:///data/in.txt", c.URL)
	case u.User != nil:
		return config{}, s.Errorf("URL %q: user information is not allowed", c.URL)
	case u.Fragment != "":
		return config{}, s.Errorf("URL %q: a '#' in a file name must be written %%23", c.URL)
	case u.Path == "" || !path.IsAbs(u.Path):
		return config{}, s.Errorf("URL %q: the path must be absolute, as in file:///data/in.txt", c.URL)
	case u.Path == "/":
		return config{}, s.Errorf("URL %q: a directory table cannot be the root directory", c.URL)
	}
	q, err := spec.ParseQuery(u.RawQuery)
	if err != nil {
		return config{}, err
	}
	opts, err := s.Parse(q)
	if err != nil {
		return config{}, err
	}
	cfg := config{
		path:    u.Path,
		dir:     strings.HasSuffix(u.Path, "/"),
		format:  opts.Get("format"),
		header:  opts.Bool("header"),
		delim:   opts.Get("delimiter")[0],
		schema:  c.Schema,
		skipBad: opts.Get("bad_rows") == BadRowsSkip,
	}
	if cfg.format != FormatCSV {
		for _, name := range []string{"header", "delimiter"} {
			if opts.IsSet(name) {
				return config{}, s.Errorf("option %s applies only to format=csv", name)
			}
		}
	}
	if cfg.delim == '"' || cfg.delim == '\n' || cfg.delim == '\r' {
		return config{}, s.Errorf("option delimiter: %q cannot be a delimiter", cfg.delim)
	}
	if err := records.CheckSchema(s, cfg.format, c.Schema); err != nil {
		return config{}, err
	}
	if cfg.cols, err = records.Columns(c); err != nil {
		return config{}, err
	}
	if cfg.dir {
		cfg.path = path.Clean(cfg.path)
	}
	if opts.IsSet("partition_by") {
		if !cfg.dir {
			return config{}, s.Errorf("option partition_by needs a directory table: end the path with / (file://%s/)", cfg.path)
		}
		if cfg.partition, err = partitionColumns(opts.Get("partition_by"), c.Schema); err != nil {
			return config{}, s.Errorf("option partition_by: %v", err)
		}
	}
	return cfg, nil
}

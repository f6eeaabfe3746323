// Package file is the file connector: a bounded source that reads one local file as
// lines of text, CSV records or JSON objects (one per line).
//
//	CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file:///data/kjv.txt';
//	CREATE TABLE t (id BIGINT, name TEXT) ENGINE=file
//	  CONNECTION='file:///data/t.csv?format=csv&header=true';
//
// The file need not exist when the table is created (as with PostgreSQL's
// file_fdw); a source that cannot read it fails at Open.
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
	"net/url"
	"path"

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
		URL:         "file:///absolute/path[?format=text|csv|json&header=true|false&delimiter=,&bad_rows=fail|skip]",
		Description: "Reads a local file: lines of text, CSV records or one JSON object per line (bounded source).",
		Source:      true,
		Options: []spec.Option{
			{Name: "format", Type: spec.Enum, Default: FormatText, Allowed: []string{FormatText, FormatCSV, FormatJSON},
				Description: "text: each line is one row of the table's single TEXT column; " +
					"csv: RFC 4180 records, columns by position, an empty unquoted field is NULL; " +
					"json: one object per line, fields by column name (case-insensitive), a missing field is NULL."},
			{Name: "header", Type: spec.Bool, Default: "false",
				Description: "format=csv only: the first record is a header and is skipped."},
			{Name: "delimiter", Type: spec.Char, Default: ",",
				Description: `format=csv only: the field delimiter, one single-byte character (\t or tab for a tab).`},
			{Name: "bad_rows", Type: spec.Enum, Default: BadRowsFail, Allowed: []string{BadRowsFail, BadRowsSkip},
				Description: "fail: a malformed row (in any column, read or not) fails the query, naming the file, the line and the fault, " +
					"as PostgreSQL's COPY does; skip: it is counted and skipped, and the client is told how many and the first."},
		},
	}
}

// Register adds the file source to r. The connector has no sink yet.
func Register(r *exec.Registry) {
	r.RegisterSource(Name, func(c exec.ConnectorSpec) (exec.Source, error) {
		cfg, err := parseConfig(c)
		if err != nil {
			return nil, err
		}
		return newSource(cfg), nil
	})
}

// Validate checks a file table at CREATE TABLE time: the URL's shape (file:// and an
// absolute path), its options, and that the table's columns suit the format. It does
// not look at the file. Errors wrap spec.ErrBadOption.
func Validate(c exec.ConnectorSpec) error {
	_, err := parseConfig(c)
	return err
}

// MaxParallelism returns the most subtasks that can share the reading of a file
// table: 1 for format=csv with bad_rows=skip, whose subtask 0 reads everything
// (see the package doc), 0 (no limit) otherwise. A bad spec gives 0; Validate
// reports it.
func MaxParallelism(c exec.ConnectorSpec) int {
	if cfg, err := parseConfig(c); err == nil && cfg.format == FormatCSV && cfg.skipBad {
		return 1
	}
	return 0
}

// config is a validated file table.
type config struct {
	path   string
	format string
	header bool
	delim  byte
	schema types.Schema // the table's columns
	cols   []int        // the positions in schema to emit, in order
	// skipBad says malformed rows are counted and skipped (bad_rows=skip),
	// not the query's failure.
	skipBad bool
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
	return cfg, nil
}

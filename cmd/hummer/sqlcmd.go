package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
	"github.com/hummer-db/hummer/wire"
)

// runSQL is `hummer sql`: the statements of -e, of the file -f names or of
// standard input (-f -) run one at a time, as psql -f sends them, in an
// engine of this process over --data-dir; each result is printed as psql's
// aligned table or its command tag. The first statement that fails stops the
// script: its error names the script's line and the SQLSTATE. A script that
// does not parse runs nothing. The data directory is locked as hummer serve
// locks it, so a script cannot change a running server's catalog under it.
func runSQL(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("sql", flag.ExitOnError)
	dataDir := fs.String("data-dir", "./hummer-data", "directory keeping the catalog (locked while the statements run)")
	stmt := fs.String("e", "", "SQL statements to run")
	file := fs.String("f", "", "file of SQL statements to run (- for standard input)")
	fs.Parse(args)
	script, name := *stmt, "-e"
	switch {
	case *file == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		script, name = string(b), "<stdin>"
	case *file != "":
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		script, name = string(b), *file
	}
	if strings.TrimSpace(script) == "" {
		return errors.New("sql: give statements with -e, -f FILE or -f - (standard input)")
	}
	stmts, err := sql.Parse(script)
	if err != nil {
		return scriptError(name, script, 0, err)
	}
	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	eng, err := openEngine(*dataDir, 0, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	defer eng.Close()
	s := eng.NewSession()
	defer s.Close()
	ctx := context.Background()
	for _, st := range stmts {
		p := startProgress(os.Stderr, stdout, eng.JobManager())
		err := s.Exec(ctx, st.Text(), func(r *session.Result) error { return printResult(ctx, stdout, r, p, s.TimeZone()) })
		p.stopAndWipe()
		if err != nil {
			return scriptError(name, script, st.OriginTextPosition(), err)
		}
	}
	return nil
}

// printResult prints a statement's rows as psql's aligned table, or its tag,
// counting the rows for the progress line (progress.go), which it wipes before
// printing; a timestamptz prints in the session's zone loc.
func printResult(ctx context.Context, stdout io.Writer, r *session.Result, p *progress, loc *time.Location) error {
	if r.Rows == nil {
		p.stopAndWipe()
		_, err := fmt.Fprintln(stdout, r.Tag)
		return err
	}
	var batches []arrow.RecordBatch
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for {
		b, err := r.Rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		p.addRows(int64(b.NumRows()))
		batches = append(batches, b)
	}
	p.stopAndWipe()
	return wire.FormatTable(stdout, r.Rows.Schema(), batches, loc)
}

// scriptError words the error of the statement at byte offset start of
// script as psql -f does, with the SQLSTATE a client would be told: the
// script's name and the line of the error's position in the statement (or
// the statement's first line).
func scriptError(name, script string, start int, err error) error {
	line := 1 + strings.Count(script[:start], "\n")
	var se *sql.Error
	if errors.As(err, &se) && se.Pos > 0 {
		// Pos counts characters of the statement's text from 1.
		rest := []rune(script[start:])
		line += strings.Count(string(rest[:min(se.Pos-1, len(rest))]), "\n")
	}
	return fmt.Errorf("%s:%d: ERROR:  %v (SQLSTATE %s)", name, line, err, wire.SQLState(err))
}

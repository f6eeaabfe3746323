// Command hummer is the one Hummer binary: `hummer serve` runs the engine in local
// mode behind a PostgreSQL wire server; `hummer sql` runs SQL in an embedded
// engine and prints the results. This file is flags and wiring only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/wire"
)

const usage = `hummer — a streaming SQL engine

Usage:
  hummer serve [--pg-addr 127.0.0.1:4566] [--data-dir ./hummer-data] [--init SQL] [--slots N]
  hummer sql [--data-dir ./hummer-data] (-e "SQL" | -f file.sql)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sql":
		err = runSQL(os.Args[2:], os.Stdout)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "hummer: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hummer:", err)
		os.Exit(1)
	}
}

// openEngine starts a local-mode engine with every connector registered.
// alloc may be nil (the default allocator).
func openEngine(dataDir string, slots int, log *slog.Logger, alloc memory.Allocator) (*session.Engine, error) {
	return openCluster(dataDir, 1, slots, log, alloc)
}

// openCluster starts an engine of tms TaskManagers in this process, joined by
// network channels on loopback when there is more than one.
func openCluster(dataDir string, tms, slots int, log *slog.Logger, alloc memory.Allocator) (*session.Engine, error) {
	reg := exec.NewRegistry()
	connectors.Register(reg)
	return session.Open(session.Config{
		DataDir:      dataDir,
		Registry:     reg,
		Validate:     connectors.Validate,
		Slots:        slots,
		TaskManagers: tms,
		Log:          log,
		Alloc:        alloc,
	})
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	pgAddr := fs.String("pg-addr", "127.0.0.1:4566", "address of the PostgreSQL wire server")
	dataDir := fs.String("data-dir", "./hummer-data", "directory keeping the catalog")
	initSQL := fs.String("init", "", "SQL statements to run once at start-up (e.g. sample tables)")
	slots := fs.Int("slots", 0, "task slots of the local TaskManager (0: one per core)")
	fs.Parse(args)

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	eng, err := openEngine(*dataDir, *slots, log, nil)
	if err != nil {
		return err
	}
	defer eng.Close()
	if *initSQL != "" {
		s := eng.NewSession()
		err := s.Exec(context.Background(), *initSQL, func(r *session.Result) error { return nil })
		s.Close()
		if err != nil {
			return fmt.Errorf("--init: %w", err)
		}
	}
	ln, err := net.Listen("tcp", *pgAddr)
	if err != nil {
		return err
	}
	srv := wire.NewServer(backend{eng}, wire.Options{Log: log})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("hummer serving", "pg-addr", ln.Addr().String(), "data-dir", *dataDir)
	fmt.Fprintf(os.Stderr, "hummer is ready: psql -h %s -p %s -U hummer\n", host(ln.Addr()), port(ln.Addr()))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

func runSQL(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sql", flag.ExitOnError)
	dataDir := fs.String("data-dir", "./hummer-data", "directory keeping the catalog")
	stmt := fs.String("e", "", "SQL statements to run")
	file := fs.String("f", "", "file of SQL statements to run")
	fs.Parse(args)
	query := *stmt
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		query = string(b)
	}
	if query == "" {
		return errors.New("sql: give statements with -e or -f")
	}
	eng, err := openEngine(*dataDir, 0, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	defer eng.Close()
	s := eng.NewSession()
	defer s.Close()
	ctx := context.Background()
	return s.Exec(ctx, query, func(r *session.Result) error {
		if r.Rows == nil {
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
			batches = append(batches, b)
		}
		return wire.FormatTable(stdout, r.Rows.Schema(), batches)
	})
}

// backend adapts the engine to the wire server.
type backend struct{ e *session.Engine }

func (b backend) NewSession(user, database string) wire.Session { return b.e.NewSession() }

func host(a net.Addr) string {
	h, _, _ := net.SplitHostPort(a.String())
	return h
}

func port(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}

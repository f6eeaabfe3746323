package session

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hummer-db/hummer/exec"
)

// Config configures an Engine.
type Config struct {
	// DataDir keeps the catalog, so tables survive a restart.
	DataDir string
	// Registry builds operators and connectors for the local TaskManager.
	Registry *exec.Registry
	// Validate checks a connector's options at CREATE TABLE time.
	Validate func(exec.ConnectorSpec) error
	// Slots of the local TaskManager; 0 means one per core.
	Slots int
	Log   *slog.Logger
}

// Engine is a local-mode Hummer: the catalog, a JobManager and one TaskManager in
// this process.
type Engine struct {
	cfg Config
}

// Open starts an engine.
func Open(cfg Config) (*Engine, error) { return &Engine{cfg: cfg}, nil }

// Close cancels running jobs and releases the engine.
func (e *Engine) Close() error { return nil }

// Session is one client's connection state: its variables and running statement.
// A Session is used by one goroutine at a time.
type Session struct {
	e *Engine
}

// NewSession starts a session with default variables.
func (e *Engine) NewSession() *Session { return &Session{e: e} }

// Exec runs every statement of query in order, calling emit with each result; it
// stops at the first error and returns it. A syntax error anywhere in query runs
// nothing. emit must consume (or Close) Result.Rows before returning.
func (s *Session) Exec(ctx context.Context, query string, emit func(*Result) error) error {
	return errors.New("session: not implemented yet")
}

// Close ends the session, stopping any job it still runs.
func (s *Session) Close() {}

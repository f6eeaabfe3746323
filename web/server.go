// Package web owns Hummer's HTTP endpoint: the health probes Kubernetes asks
// (/healthz, /readyz, server.go) and the Prometheus metrics (/metrics,
// metrics.go). Every role of the binary serves one on --http-addr. It may
// import the runtime (exec/...) and the session layer; only cmd/hummer
// imports it.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures a Server.
type Config struct {
	// Addr is the address to listen on (host:port; port 0 picks a free one).
	Addr string
	// Ready says why the process cannot take work yet, or nil once it can; it
	// answers /readyz. Nil means always ready.
	Ready func() error
	// Metrics, when set, is served at /metrics.
	Metrics *Metrics
	Log     *slog.Logger
}

// Server is a running HTTP endpoint.
type Server struct {
	cfg Config
	ln  net.Listener
	srv *http.Server
	mux *http.ServeMux
	// done is closed when Serve returns.
	done chan struct{}
}

// Listen starts serving cfg.Addr. Close stops it.
func Listen(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("--http-addr: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, mux: http.NewServeMux(), done: make(chan struct{})}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Metrics.reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn)}))
	}
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn)}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Log.Error("http server stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server: it waits a few seconds for requests being answered,
// then drops them.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

// healthz answers 200 while the process runs: a liveness probe.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// readyz answers 200 once the process can take work, else 503 with the reason:
// a readiness probe.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", err)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

// Readiness is a process's readiness: not ready, for a reason, until Ready is
// called, and again when NotReady is. Its Check method is a Config.Ready.
type Readiness struct {
	reason atomic.Pointer[string]
}

// NewReadiness returns a Readiness that is not ready, for the given reason.
func NewReadiness(reason string) *Readiness {
	r := new(Readiness)
	r.NotReady(reason)
	return r
}

// NotReady records why the process cannot take work.
func (r *Readiness) NotReady(reason string) { r.reason.Store(&reason) }

// Ready records that the process can take work.
func (r *Readiness) Ready() { r.reason.Store(nil) }

// Check returns nil when ready, else an error carrying the reason.
func (r *Readiness) Check() error {
	if p := r.reason.Load(); p != nil {
		return errors.New(*p)
	}
	return nil
}

// Package web owns Hummer's HTTP endpoint: the health probes Kubernetes asks
// (/healthz, /readyz, server.go), the Prometheus metrics (/metrics,
// metrics.go) and, on a JobManager, the JSON API (api.go) and the dashboard
// that polls it (ui/, embedded in the binary), behind the PostgreSQL port's
// users when not on loopback (auth.go). Every role of the binary serves one on
// --http-addr. It may import the runtime (exec/...), the session layer and
// wire/scram; only cmd/hummer imports it.
package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hummer-db/hummer/session"
)

// Config configures a Server.
type Config struct {
	// Addr is the address to listen on (host:port; port 0 picks a free one).
	Addr string
	// Ready says why the process cannot take work yet, or nil once it can; it
	// answers /readyz. Nil means always ready.
	Ready func() error
	// TLS, when set, serves HTTPS (the PostgreSQL port's certificate).
	TLS *tls.Config
	// Metrics, when set, is served at /metrics.
	Metrics *Metrics
	// Dashboard (serve, jobmanager) serves the JSON API and the dashboard,
	// of the engine SetEngine names (503 until then).
	Dashboard bool
	// Auth requires HTTP basic auth of the engine's users of every request
	// but the probes' (auth.go); the caller sets it for addresses off
	// loopback. It needs Dashboard.
	Auth bool
	Log  *slog.Logger
}

// Server is a running HTTP endpoint.
type Server struct {
	cfg Config
	ln  net.Listener
	srv *http.Server
	mux *http.ServeMux
	// done is closed when Serve returns.
	done      chan struct{}
	started   time.Time
	passwords passwordCache
	eng       atomic.Pointer[session.Engine]
}

// SetEngine names the engine whose jobs the API shows and whose users log in.
func (s *Server) SetEngine(e *session.Engine) { s.eng.Store(e) }

// engine returns the engine SetEngine named, or answers 503 and returns nil.
func (s *Server) engine(w http.ResponseWriter) *session.Engine {
	e := s.eng.Load()
	if e == nil {
		httpError(w, http.StatusServiceUnavailable, "the engine is starting")
	}
	return e
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
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	if cfg.Auth && !cfg.Dashboard {
		ln.Close()
		return nil, errors.New("web: authentication needs the engine's users")
	}
	s := &Server{cfg: cfg, ln: ln, mux: http.NewServeMux(), done: make(chan struct{}), started: time.Now()}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if cfg.Metrics != nil {
		s.mux.HandleFunc("GET /metrics", s.auth(promhttp.HandlerFor(cfg.Metrics.reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn)}).ServeHTTP))
	}
	if cfg.Dashboard {
		s.mux.HandleFunc("GET /api/overview", s.auth(s.overview))
		s.mux.HandleFunc("GET /api/jobs/{id}", s.auth(s.job))
		s.mux.HandleFunc("POST /api/jobs/{id}/cancel", s.auth(sameOrigin(s.cancelJob)))
		s.mux.HandleFunc("POST /api/explain", s.auth(sameOrigin(s.explain)))
		s.mux.HandleFunc("GET /", s.auth(s.dashboard))
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

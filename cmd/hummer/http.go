package main

import (
	"errors"
	"flag"
	"log/slog"
	"syscall"

	"github.com/hummer-db/hummer/web"
)

// defaultHTTPAddr is where serve and jobmanager answer HTTP by default: Flink's
// dashboard port, on loopback.
const defaultHTTPAddr = "127.0.0.1:8081"

// httpOptions is the --http-addr flag of a command.
type httpOptions struct {
	fs   *flag.FlagSet
	addr *string
	def  string
}

// httpFlag declares --http-addr with the given default ("" is off).
func httpFlag(fs *flag.FlagSet, def string) httpOptions {
	return httpOptions{fs: fs, def: def, addr: fs.String("http-addr", def,
		"address of the HTTP endpoint: /healthz, /readyz, /metrics (empty: none)")}
}

// endpoint is what a process's HTTP endpoint reports: its readiness and its
// metrics.
type endpoint struct {
	ready   *web.Readiness
	metrics *web.Metrics
}

// newEndpoint returns an endpoint not ready for the given reason.
func newEndpoint(notReady string) endpoint {
	return endpoint{ready: web.NewReadiness(notReady), metrics: web.NewMetrics()}
}

// start serves the HTTP endpoint, or nothing when the address is empty (stop
// is then a no-op). The default address taken by another process (a second
// server on one host, say) is a warning, not a failure: only an address asked
// for must be had.
func (o httpOptions) start(ep endpoint, log *slog.Logger) (stop func(), err error) {
	if *o.addr == "" {
		return func() {}, nil
	}
	s, err := web.Listen(web.Config{Addr: *o.addr, Ready: ep.ready.Check, Metrics: ep.metrics, Log: log})
	if errors.Is(err, syscall.EADDRINUSE) && *o.addr == o.def && !o.explicit() {
		log.Warn("no HTTP endpoint: its default address is in use (give another with --http-addr)", "http-addr", *o.addr)
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	log.Info("http endpoint", "http-addr", s.Addr().String())
	return func() { s.Close() }, nil
}

// explicit reports whether the command line gave --http-addr.
func (o httpOptions) explicit() bool {
	set := false
	o.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "http-addr" })
	return set
}

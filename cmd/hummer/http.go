package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"log/slog"
	"net"
	"syscall"

	"github.com/hummer-db/hummer/session"
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
func httpFlag(fs *flag.FlagSet, def string, what string) httpOptions {
	return httpOptions{fs: fs, def: def, addr: fs.String("http-addr", def,
		"address of the HTTP endpoint: "+what+" (empty: none)")}
}

// endpoint is what a process's HTTP endpoint reports: its readiness, its
// metrics and, on a JobManager, its engine's jobs.
type endpoint struct {
	ready   *web.Readiness
	metrics *web.Metrics
	srv     *web.Server // nil without an HTTP endpoint
	https   bool
}

// newEndpoint returns an endpoint not ready for the given reason.
func newEndpoint(notReady string) *endpoint {
	return &endpoint{ready: web.NewReadiness(notReady), metrics: web.NewMetrics()}
}

// attach has the endpoint show eng: its jobs' metrics, the API and the
// dashboard.
func (ep *endpoint) attach(eng *session.Engine) {
	ep.metrics.WatchJobs(eng.JobManager())
	if ep.srv != nil {
		ep.srv.SetEngine(eng)
	}
}

// start serves the HTTP endpoint, or nothing when the address is empty (stop
// is then a no-op). The default address taken by another process (a second
// server on one host, say) is a warning, not a failure: only an address asked
// for must be had. With dashboard (a JobManager) it serves the dashboard and
// its API, and off loopback asks for the PostgreSQL port's users; with
// --http-tls it serves HTTPS with sec's certificate.
func (o httpOptions) start(ep *endpoint, dashboard bool, sec *securityFlags, log *slog.Logger) (stop func(), err error) {
	if *o.addr == "" {
		return func() {}, nil
	}
	var tlsConfig *tls.Config
	if sec != nil && *sec.httpTLS {
		if tlsConfig, err = sec.tlsConfig(); err != nil {
			return nil, err
		}
		if tlsConfig == nil {
			return nil, errors.New("--http-tls needs --tls-cert and --tls-key")
		}
	}
	auth := dashboard && !loopbackAddr(*o.addr)
	if auth && tlsConfig == nil {
		log.Warn("the HTTP endpoint asks for passwords without TLS: they cross the network in clear text (--http-tls serves HTTPS)", "http-addr", *o.addr)
	}
	s, err := web.Listen(web.Config{Addr: *o.addr, Ready: ep.ready.Check, Metrics: ep.metrics,
		Dashboard: dashboard, Auth: auth, TLS: tlsConfig, Log: log})
	if errors.Is(err, syscall.EADDRINUSE) && *o.addr == o.def && !o.explicit() {
		log.Warn("no HTTP endpoint: its default address is in use (give another with --http-addr)", "http-addr", *o.addr)
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	ep.srv, ep.https = s, tlsConfig != nil
	log.Info("http endpoint", "http-addr", s.Addr().String(), "dashboard", dashboard, "basic-auth", auth, "tls", ep.https)
	return func() { s.Close() }, nil
}

// dashboardURL is the dashboard's address for the start-up line, "" when
// there is none.
func (ep *endpoint) dashboardURL() string {
	if ep.srv == nil {
		return ""
	}
	a := ep.srv.Addr().(*net.TCPAddr)
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if ep.https {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port(a)) + "/"
}

// loopbackAddr reports whether a listen address is on loopback only; an
// empty host (all interfaces) or a name that does not resolve to loopback is
// not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// explicit reports whether the command line gave --http-addr.
func (o httpOptions) explicit() bool {
	set := false
	o.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "http-addr" })
	return set
}

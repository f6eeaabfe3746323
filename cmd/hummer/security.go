package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/wire"
)

// securityFlags are the flags of serve and jobmanager about who may connect to
// the PostgreSQL port and how.
type securityFlags struct {
	auth           *string
	password       *string
	tlsCert        *string
	tlsKey         *string
	tlsRequired    *bool
	maxConnections *int
	reserved       *int
	authTimeout    *time.Duration
	httpTLS        *bool
}

// passwordEnv is the environment variable holding the superuser's password,
// the way to give it without showing it in the process list.
const passwordEnv = "HUMMER_PASSWORD"

func addSecurityFlags(fs *flag.FlagSet) *securityFlags {
	return &securityFlags{
		auth: fs.String("auth", "", "how clients authenticate: trust, password or scram-sha-256 "+
			"(default: trust when --pg-addr is a loopback address, scram-sha-256 otherwise)"),
		password: fs.String("superuser-password", "", "password of the superuser "+session.Superuser+
			" (default: $"+passwordEnv+"; kept as a SCRAM verifier in the catalog)"),
		tlsCert:     fs.String("tls-cert", "", "PEM certificate (chain) for TLS on the PostgreSQL port"),
		tlsKey:      fs.String("tls-key", "", "PEM private key of --tls-cert"),
		tlsRequired: fs.Bool("tls-required", false, "refuse clients that do not use TLS"),
		maxConnections: fs.Int("max-connections", wire.DefaultMaxConnections,
			"connections served at once; more are refused with 53300"),
		reserved: fs.Int("superuser-reserved-connections", wire.DefaultSuperuserReserved,
			"of --max-connections, those only superusers may take, so one can always get in to KILL (0: none)"),
		authTimeout: fs.Duration("auth-timeout", time.Minute, "time a client has to complete TLS and authentication"),
		httpTLS: fs.Bool("http-tls", false, "serve --http-addr over HTTPS with --tls-cert and --tls-key "+
			"(probes then need scheme HTTPS)"),
	}
}

// serverOptions bootstraps the superuser and builds the wire server's options
// for a server listening on addr.
func (f *securityFlags) serverOptions(eng *session.Engine, addr net.Addr, log *slog.Logger) (wire.Options, error) {
	if *f.reserved < 0 || *f.reserved >= *f.maxConnections {
		return wire.Options{}, fmt.Errorf("--superuser-reserved-connections (%d) must be at least 0 and less than --max-connections (%d)", *f.reserved, *f.maxConnections)
	}
	opts := wire.Options{Log: log, Users: backend{eng}, MaxConnections: *f.maxConnections,
		SuperuserReservedConnections: *f.reserved, StartupTimeout: *f.authTimeout,
		TLSRequired: *f.tlsRequired}
	loopback := isLoopback(addr)
	switch {
	case *f.auth != "":
		m, err := wire.ParseAuthMethod(*f.auth)
		if err != nil {
			return opts, fmt.Errorf("--auth: %w", err)
		}
		opts.Auth = m
	case loopback:
		opts.Auth = wire.AuthTrust
	default:
		opts.Auth = wire.AuthSCRAM
	}

	var err error
	if opts.TLS, err = f.tlsConfig(); err != nil {
		return opts, err
	}
	if opts.TLS == nil && *f.tlsRequired {
		return opts, errors.New("--tls-required needs --tls-cert and --tls-key")
	}

	password := *f.password
	if password == "" {
		password = os.Getenv(passwordEnv)
	}
	hasPassword, err := eng.BootstrapSuperuser(password)
	if err != nil {
		return opts, err
	}
	if opts.Auth != wire.AuthTrust && !hasPassword {
		return opts, fmt.Errorf("--auth %s: the superuser %s has no password: give one with --superuser-password or $%s",
			opts.Auth, session.Superuser, passwordEnv)
	}
	switch {
	case opts.Auth == wire.AuthTrust && !loopback:
		log.Warn("--auth trust on a non-loopback address: anyone who reaches the port is let in", "addr", addr.String())
	case opts.Auth == wire.AuthPassword && opts.TLS == nil && !loopback:
		log.Warn("--auth password without TLS: passwords cross the network in clear text", "addr", addr.String())
	}
	log.Info("PostgreSQL authentication", "auth", opts.Auth.String(), "tls", opts.TLS != nil, "tls-required", opts.TLSRequired,
		"max-connections", opts.MaxConnections)
	return opts, nil
}

// tlsConfig is the TLS of --tls-cert and --tls-key, nil without them; the
// PostgreSQL port and the HTTP endpoint both serve it.
func (f *securityFlags) tlsConfig() (*tls.Config, error) {
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if *f.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(*f.tlsCert, *f.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// isLoopback reports whether a listener's address is on the loopback interface.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// LookupUser gives the wire server the catalog's users.
func (b backend) LookupUser(name string) (wire.User, bool) {
	u, ok := b.e.User(name)
	if !ok {
		return wire.User{}, false
	}
	return wire.User{Verifier: u.Verifier, Superuser: u.Superuser}, true
}

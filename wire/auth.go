package wire

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/wire/scram"
)

// AuthMethod is how the server checks that a client is the user it names.
type AuthMethod int

const (
	// AuthTrust lets a client in as any user it names that exists (any user at
	// all when Options.Users is nil), without a password.
	AuthTrust AuthMethod = iota
	// AuthPassword asks for the password in clear text (use it over TLS) and
	// checks it against the user's verifier.
	AuthPassword
	// AuthSCRAM is SCRAM-SHA-256: the password never crosses the wire, and over
	// TLS SCRAM-SHA-256-PLUS binds the exchange to the server's certificate.
	AuthSCRAM
)

// ParseAuthMethod reads the names PostgreSQL's pg_hba.conf uses: trust,
// password, scram-sha-256.
func ParseAuthMethod(s string) (AuthMethod, error) {
	switch s {
	case "trust":
		return AuthTrust, nil
	case "password":
		return AuthPassword, nil
	case "scram-sha-256":
		return AuthSCRAM, nil
	}
	return 0, fmt.Errorf("unknown authentication method %q: want trust, password or scram-sha-256", s)
}

// String returns the method's name as ParseAuthMethod reads it.
func (m AuthMethod) String() string {
	switch m {
	case AuthTrust:
		return "trust"
	case AuthPassword:
		return "password"
	case AuthSCRAM:
		return "scram-sha-256"
	}
	return fmt.Sprintf("AuthMethod(%d)", int(m))
}

// User is what the server needs to know of a login role.
type User struct {
	// Verifier is the password's SCRAM-SHA-256 verifier in PostgreSQL's text form
	// (see package scram); empty when the user has no password, so that
	// password logins fail.
	Verifier  string
	Superuser bool
}

// Users is the directory of login roles the server consults at every login.
// Implementations must be safe for concurrent use.
type Users interface {
	// LookupUser returns the user called name, as the client spelled it.
	LookupUser(name string) (User, bool)
}

// authFailedCode is invalid_password, the answer to a wrong password and to an
// unknown user alike.
const authFailedCode = "28P01"

// errAuthFailed ends a connection whose authentication failed (the client has
// been told).
var errAuthFailed = errors.New("authentication failed")

// authenticate runs the configured authentication exchange for user and
// reports whether the user is a superuser. On failure the client has been
// sent its FATAL error.
func (c *conn) authenticate(user string) (superuser bool, err error) {
	users := c.srv.opts.Users
	var u User
	known := false
	if users != nil {
		u, known = users.LookupUser(user)
	}
	switch c.srv.opts.Auth {
	case AuthTrust:
		if users != nil && !known {
			c.fatal(codeInvalidAuthorization, fmt.Sprintf("role \"%s\" does not exist", user))
			return false, errAuthFailed
		}
		return u.Superuser, nil
	case AuthPassword:
		err = c.passwordAuth(user, u, known)
	case AuthSCRAM:
		err = c.scramAuth(user, u, known)
	default:
		err = fmt.Errorf("unknown authentication method %v", c.srv.opts.Auth)
		c.fatal(codeInternalError, internalErrorMessage)
	}
	return u.Superuser, err
}

// verifier returns the verifier to check user's proof against: a mock one for
// unknown users and users without a password, so that they go through the same
// exchange, in the same time, and fail the same way as a wrong password.
func (c *conn) verifier(user string, u User, known bool) (v scram.Verifier, real bool) {
	if known && u.Verifier != "" {
		if v, err := scram.ParseVerifier(u.Verifier); err == nil {
			return v, true
		}
		c.log.Error("user has an unreadable password verifier", "user", user)
	}
	return scram.MockVerifier(c.srv.mockSecret[:], user), false
}

// passwordAuth asks for the password in clear text and checks it.
func (c *conn) passwordAuth(user string, u User, known bool) error {
	c.send(&pgproto3.AuthenticationCleartextPassword{})
	if err := c.flush(); err != nil {
		return err
	}
	body, err := readAuthMessage(c.nc)
	if err != nil {
		return c.authProtocolError(err)
	}
	var pm pgproto3.PasswordMessage
	if err := pm.Decode(body); err != nil {
		return c.authProtocolError(err)
	}
	v, real := c.verifier(user, u, known)
	if !v.CheckPassword(pm.Password) || !real {
		return c.authFailed(user, "wrong password or unknown user")
	}
	return nil
}

// scramAuth runs a SCRAM-SHA-256 exchange (SCRAM-SHA-256-PLUS when the client
// chooses it over TLS).
func (c *conn) scramAuth(user string, u User, known bool) error {
	binding := c.channelBinding()
	mechs := []string{scram.SHA256}
	if binding != nil {
		mechs = []string{scram.SHA256Plus, scram.SHA256}
	}
	c.send(&pgproto3.AuthenticationSASL{AuthMechanisms: mechs})
	if err := c.flush(); err != nil {
		return err
	}
	body, err := readAuthMessage(c.nc)
	if err != nil {
		return c.authProtocolError(err)
	}
	var first pgproto3.SASLInitialResponse
	if err := first.Decode(body); err != nil {
		return c.authProtocolError(err)
	}
	v, real := c.verifier(user, u, known)
	srv, err := scram.NewServer(v, first.AuthMechanism, binding)
	if err != nil {
		return c.authProtocolError(err)
	}
	serverFirst, err := srv.First(first.Data)
	if err != nil {
		return c.authProtocolError(err)
	}
	c.send(&pgproto3.AuthenticationSASLContinue{Data: serverFirst})
	if err := c.flush(); err != nil {
		return err
	}
	if body, err = readAuthMessage(c.nc); err != nil {
		return c.authProtocolError(err)
	}
	var final pgproto3.SASLResponse
	if err := final.Decode(body); err != nil {
		return c.authProtocolError(err)
	}
	serverFinal, err := srv.Final(final.Data)
	switch {
	case errors.Is(err, scram.ErrAuthFailed):
		return c.authFailed(user, err.Error())
	case err != nil:
		return c.authProtocolError(err)
	case !real:
		// Unreachable short of guessing a random StoredKey, but an unknown
		// user must never get in.
		return c.authFailed(user, "unknown user")
	}
	c.send(&pgproto3.AuthenticationSASLFinal{Data: serverFinal})
	return nil
}

// authFailed tells the client its password was wrong (whatever the reason, so
// that nobody learns which user names exist) and logs why.
func (c *conn) authFailed(user, why string) error {
	c.log.Info("password authentication failed", "user", user, "reason", why)
	c.fatal(authFailedCode, fmt.Sprintf("password authentication failed for user \"%s\"", user))
	return errAuthFailed
}

// authProtocolError answers an authentication exchange the client broke. A
// client that simply went away (libpq does, to ask its user for a password) is
// told nothing.
func (c *conn) authProtocolError(err error) error {
	var fe *errFraming
	switch {
	case errors.As(err, &fe):
		c.fatal(codeProtocolViolation, fe.msg)
	case errors.Is(err, scram.ErrMalformed):
		c.fatal(codeProtocolViolation, err.Error())
	case clientGone(err):
	default: // a message that does not decode
		c.fatal(codeProtocolViolation, "invalid authentication message")
	}
	return err
}

// clientGone reports whether err is the connection failing (closed, reset,
// timed out) rather than something the client sent.
func clientGone(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// fatal sends a FATAL error before the connection closes.
func (c *conn) fatal(code, msg string) {
	c.send(fatalResponse(code, msg))
	c.flush()
}

// channelBinding returns the tls-server-end-point data of the connection, nil
// when it is not over TLS or the server's certificate allows no binding.
func (c *conn) channelBinding() []byte {
	if c.tlsConn == nil {
		return nil
	}
	return c.srv.tlsBinding
}

// endPointBinding computes the channel binding data of cfg's certificate, when
// cfg has exactly one (with several, which one a handshake picks is not known
// in advance, so SCRAM-SHA-256-PLUS is not offered).
func endPointBinding(cfg *tls.Config) []byte {
	if cfg == nil || len(cfg.Certificates) != 1 || cfg.GetCertificate != nil || len(cfg.Certificates[0].Certificate) == 0 {
		return nil
	}
	leaf := cfg.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err != nil {
			return nil
		}
	}
	data, ok := scram.EndPointBinding(leaf)
	if !ok {
		return nil
	}
	return data
}

// passwordClause matches the password of CREATE/ALTER USER ... IDENTIFIED BY,
// which must not reach the server log with a failed statement.
var passwordClause = regexp.MustCompile(`(?is)(IDENTIFIED\s+BY\s+)'(?:[^']|'')*'`)

// redact hides the passwords in a statement's text, for logging.
func redact(query string) string {
	return passwordClause.ReplaceAllString(query, "$1'***'")
}

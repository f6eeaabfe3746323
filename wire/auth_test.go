package wire

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/wire/scram"
)

// userMap is a Users directory for tests.
type userMap map[string]User

func (m userMap) LookupUser(name string) (User, bool) {
	u, ok := m[name]
	return u, ok
}

// testUsers has alice (password "alice secret"), root (superuser, "root pw")
// and nopass, who has no password.
func testUsers(t testing.TB) userMap {
	t.Helper()
	v := func(pw string) string {
		v, err := scram.NewVerifier(pw)
		if err != nil {
			t.Fatal(err)
		}
		return v.String()
	}
	return userMap{
		"alice":  {Verifier: v("alice secret")},
		"root":   {Verifier: v("root pw"), Superuser: true},
		"nopass": {},
	}
}

// pgxConnect connects with a connection string of the test server's address,
// returning the error rather than failing.
func pgxConnect(t *testing.T, ts *testServer, userinfo, params string) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@%s/db?default_query_exec_mode=simple_protocol&%s", userinfo, ts.addr, params))
	if err == nil {
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	return c, err
}

// wantPgError checks that err is a server error with the given severity, code
// and message.
func wantPgError(t *testing.T, what string, err error, severity, code, msg string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Errorf("%s: %v, want %s %s", what, err, code, msg)
		return
	}
	if pe.Severity != severity || pe.Code != code || pe.Message != msg {
		t.Errorf("%s: got %s %s %q, want %s %s %q", what, pe.Severity, pe.Code, pe.Message, severity, code, msg)
	}
}

func TestPasswordMethods(t *testing.T) {
	for _, m := range []AuthMethod{AuthSCRAM, AuthPassword} {
		t.Run(m.String(), func(t *testing.T) {
			ts := startServerWith(t, Options{Auth: m, Users: testUsers(t)})
			c, err := pgxConnect(t, ts, "alice:alice%20secret", "sslmode=disable")
			if err != nil {
				t.Fatalf("right password: %v", err)
			}
			if v := c.PgConn().ParameterStatus("is_superuser"); v != "off" {
				t.Errorf("alice is_superuser = %q", v)
			}
			if c, err := pgxConnect(t, ts, "root:root%20pw", "sslmode=disable"); err != nil {
				t.Fatalf("root: %v", err)
			} else if v := c.PgConn().ParameterStatus("is_superuser"); v != "on" {
				t.Errorf("root is_superuser = %q", v)
			}
			// Wrong password, unknown user, user without password: the same answer.
			for _, who := range []string{"alice:wrong", "alice:", "mallory:alice%20secret", "nopass:x", "root:alice%20secret"} {
				_, err := pgxConnect(t, ts, who, "sslmode=disable")
				user, _, _ := strings.Cut(who, ":")
				wantPgError(t, who, err, "FATAL", "28P01", fmt.Sprintf("password authentication failed for user \"%s\"", user))
			}
			ts.be.mu.Lock()
			users := strings.Join(ts.be.users, ",")
			ts.be.mu.Unlock()
			if users != "alice/db,root/db" {
				t.Errorf("sessions opened for %q", users)
			}
		})
	}
}

func TestTrustNeedsAnExistingUser(t *testing.T) {
	ts := startServerWith(t, Options{Auth: AuthTrust, Users: testUsers(t)})
	if _, err := pgxConnect(t, ts, "alice", "sslmode=disable"); err != nil {
		t.Fatalf("alice: %v", err)
	}
	_, err := pgxConnect(t, ts, "mallory", "sslmode=disable")
	wantPgError(t, "mallory", err, "FATAL", "28000", `role "mallory" does not exist`)
}

// TestSCRAMUnknownUserLooksReal: the salt offered for an unknown user is stable
// across attempts, like a real user's, so probing does not reveal which names
// exist.
func TestSCRAMUnknownUserLooksReal(t *testing.T) {
	ts := startServerWith(t, Options{Auth: AuthSCRAM, Users: testUsers(t)})
	serverFirst := func(user string) string {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		fe := pgproto3.NewFrontend(nc, nc)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": user}})
		fe.Flush()
		msg, err := fe.Receive()
		if sasl, ok := msg.(*pgproto3.AuthenticationSASL); err != nil || !ok || fmt.Sprint(sasl.AuthMechanisms) != "[SCRAM-SHA-256]" {
			t.Fatalf("want AuthenticationSASL offering SCRAM-SHA-256 alone without TLS, got %#v, %v", msg, err)
		}
		fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=clientnonce")})
		fe.Flush()
		msg, err = fe.Receive()
		cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
		if err != nil || !ok {
			t.Fatalf("want SASLContinue, got %#v, %v", msg, err)
		}
		_, salt, _ := strings.Cut(string(cont.Data), ",s=")
		return salt
	}
	if a, b := serverFirst("mallory"), serverFirst("mallory"); a != b {
		t.Errorf("unknown user's salt changes: %s, %s", a, b)
	}
	if a, b := serverFirst("alice"), serverFirst("alice"); a != b {
		t.Errorf("alice's salt changes: %s, %s", a, b)
	}
}

// testPKI is a CA and a server certificate it signed for 127.0.0.1 and
// localhost, written to files for psql.
type testPKI struct {
	caFile, certFile, keyFile string
	serverTLS                 *tls.Config
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Hummer test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	p := &testPKI{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "server.pem"), keyFile: filepath.Join(dir, "server.key")}
	write := func(path, typ string, b []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(p.caFile, "CERTIFICATE", caDER)
	write(p.certFile, "CERTIFICATE", der)
	write(p.keyFile, "EC PRIVATE KEY", keyDER)
	cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	p.serverTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return p
}

func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	ts := startServerWith(t, Options{Auth: AuthSCRAM, Users: testUsers(t), TLS: pki.serverTLS, TLSRequired: true})

	// verify-full checks the certificate against the CA and the host name; over
	// TLS the server offers SCRAM-SHA-256-PLUS, which pgx then must use.
	c, err := pgxConnect(t, ts, "alice:alice%20secret", "sslmode=verify-full&sslrootcert="+pki.caFile+"&channel_binding=require")
	if err != nil {
		t.Fatalf("verify-full with channel binding: %v", err)
	}
	if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("connection is %T, not TLS", c.PgConn().Conn())
	}
	var one int64
	if err := c.QueryRow(testCtx(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 over TLS: %d, %v", one, err)
	}
	// Without the CA, verification fails on the client.
	if _, err := pgxConnect(t, ts, "alice:alice%20secret", "sslmode=verify-full"); err == nil {
		t.Error("verify-full accepted a certificate of an unknown CA")
	}
	// A wrong password over TLS is still 28P01.
	_, err = pgxConnect(t, ts, "alice:nope", "sslmode=require")
	wantPgError(t, "wrong password over TLS", err, "FATAL", "28P01", `password authentication failed for user "alice"`)
	// Plain text is refused.
	_, err = pgxConnect(t, ts, "alice:alice%20secret", "sslmode=disable")
	wantPgError(t, "plain text", err, "FATAL", "28000", "SSL required: this server accepts only encrypted connections (sslmode=require)")

	// Cancel requests come in plain text (libpq, pgx) and still work.
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(testCtx(t), "block")
		done <- err
	}()
	waitFor(t, ts.be.blockStart, "the statement to start")
	if err := c.PgConn().CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	wantPgError(t, "cancelled statement", waitFor(t, done, "the cancelled statement"), "ERROR", "57014", "canceling statement due to user request")
	waitFor(t, ts.be.rowsClosed, "rows to close")

	t.Run("psql", func(t *testing.T) {
		for _, mode := range []string{"require", "verify-ca", "verify-full"} {
			// PGCHANNELBINDING=require: libpq must use SCRAM-SHA-256-PLUS.
			out, errOut, err := psqlWith(t, ts, []string{"PGPASSWORD=alice secret", "PGSSLMODE=" + mode, "PGSSLROOTCERT=" + pki.caFile,
				"PGCHANNELBINDING=require"},
				"alice", "-A", "-t", "-c", "SELECT 1", "-c", `\conninfo`)
			if err != nil || !strings.HasPrefix(out, "1\n") || !strings.Contains(out, "SSL connection (protocol: TLSv1.3") {
				t.Errorf("psql sslmode=%s: %v\n%s%s", mode, err, out, errOut)
			}
		}
		_, errOut, err := psqlWith(t, ts, []string{"PGPASSWORD=alice secret", "PGSSLMODE=disable"}, "alice", "-c", "SELECT 1")
		if err == nil || !strings.Contains(errOut, "SSL required") {
			t.Errorf("psql sslmode=disable: %v\n%s", err, errOut)
		}
	})
}

// psqlWith runs psql as user with extra environment, returning what it printed
// and how it exited.
func psqlWith(t *testing.T, ts *testServer, env []string, user string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-h", "127.0.0.1", "-p", ts.port, "-U", user, "-d", "db", "-X", "-w"}, args...)...)
	cmd.Env = append(append(os.Environ(), "PGCLIENTENCODING=UTF8", "PGCONNECT_TIMEOUT=10", "LC_ALL=C.UTF-8", "PAGER=", "PSQL_PAGER="), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func TestPsqlPasswords(t *testing.T) {
	ts := startServerWith(t, Options{Auth: AuthSCRAM, Users: testUsers(t)})
	out, errOut, err := psqlWith(t, ts, []string{"PGPASSWORD=alice secret"}, "alice", "-A", "-t", "-c", "SELECT 1")
	if err != nil || out != "1\n" {
		t.Errorf("right password: %v\n%s%s", err, out, errOut)
	}
	_, errOut, err = psqlWith(t, ts, []string{"PGPASSWORD=wrong"}, "alice", "-c", "SELECT 1")
	if err == nil || !strings.Contains(errOut, `FATAL:  password authentication failed for user "alice"`) {
		t.Errorf("wrong password: %v\n%s", err, errOut)
	}
	// Without a password psql gives up (-w: never prompt) and hangs up mid-exchange.
	_, errOut, err = psqlWith(t, ts, nil, "alice", "-c", "SELECT 1")
	if err == nil || !strings.Contains(errOut, "no password supplied") {
		t.Errorf("no password: %v\n%s", err, errOut)
	}
}

func TestTLSDeclinedWithoutCertificate(t *testing.T) {
	// sslmode=require against a server without TLS fails on the client.
	ts := startServer(t)
	if _, err := pgxConnect(t, ts, "alice", "sslmode=require"); err == nil {
		t.Error("sslmode=require connected to a server without TLS")
	}
}

// TestPlainTextAfterSSLRequest: bytes sent in clear after an SSLRequest, before
// the TLS handshake, are never taken as part of the encrypted session
// (CVE-2021-23214 in PostgreSQL).
func TestPlainTextAfterSSLRequest(t *testing.T) {
	pki := newTestPKI(t)
	ts := startServerWith(t, Options{TLS: pki.serverTLS})
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	var pkt []byte
	pkt = binary.BigEndian.AppendUint32(pkt, 8)
	pkt = binary.BigEndian.AppendUint32(pkt, codeSSLRequest)
	pkt, _ = (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "x"}}).Encode(pkt)
	pkt, _ = (&pgproto3.Query{String: "SELECT 1"}).Encode(pkt)
	nc.Write(pkt)
	rest, _ := io.ReadAll(nc)
	if len(rest) == 0 || rest[0] != 'S' {
		t.Fatalf("answer %q, want 'S'", rest)
	}
	if bytes.Contains(rest, []byte("SELECT")) || bytes.Contains(rest, []byte{'Z', 0, 0, 0, 5}) {
		t.Errorf("the server answered plain text sent before the handshake: %q", rest)
	}
	if n := ts.be.opened.Load(); n != 0 {
		t.Errorf("%d sessions opened", n)
	}
}

func TestMaxConnections(t *testing.T) {
	ts := startServerWith(t, Options{MaxConnections: 2})
	c1, err := pgxConnect(t, ts, "a", "sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgxConnect(t, ts, "b", "sslmode=disable"); err != nil {
		t.Fatal(err)
	}
	_, err = pgxConnect(t, ts, "c", "sslmode=disable")
	wantPgError(t, "third connection", err, "FATAL", "53300", "sorry, too many clients already")
	// psql with its default sslmode=prefer hears the same.
	_, errOut, err := psqlWith(t, ts, nil, "d", "-c", "SELECT 1")
	if err == nil || !strings.Contains(errOut, "sorry, too many clients already") {
		t.Errorf("psql: %v\n%s", err, errOut)
	}
	c1.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := pgxConnect(t, ts, "e", "sslmode=disable")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a connection closed but no new one is admitted: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval while the server forgets c1
	}
}

// TestSuperuserReservedConnections: once MaxConnections minus the reserved
// ones are open, another user is refused and a superuser still gets in, as
// PostgreSQL's superuser_reserved_connections.
func TestSuperuserReservedConnections(t *testing.T) {
	ts := startServerWith(t, Options{Auth: AuthTrust, Users: testUsers(t), MaxConnections: 4, SuperuserReservedConnections: 2})
	for i := range 2 {
		if _, err := pgxConnect(t, ts, "alice", "sslmode=disable"); err != nil {
			t.Fatalf("connection %d of alice: %v", i+1, err)
		}
	}
	_, err := pgxConnect(t, ts, "alice", "sslmode=disable")
	wantPgError(t, "third connection of alice", err, "FATAL", "53300",
		"remaining connection slots are reserved for roles with the SUPERUSER attribute")
	for i := range 2 {
		c, err := pgxConnect(t, ts, "root", "sslmode=disable")
		if err != nil {
			t.Fatalf("superuser connection %d: %v", i+1, err)
		}
		if _, err := c.Exec(context.Background(), "SELECT 1"); err != nil {
			t.Fatalf("superuser connection %d: %v", i+1, err)
		}
	}
	_, err = pgxConnect(t, ts, "root", "sslmode=disable")
	wantPgError(t, "fifth connection", err, "FATAL", "53300", "sorry, too many clients already")
}

// rawStartup dials and sends bytes, returning the connection.
func rawDial(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

func TestStartupPacketLimit(t *testing.T) {
	ts := startServer(t)
	for _, n := range []uint32{10001, 1 << 30, 0xffffffff, 3} {
		nc := rawDial(t, ts)
		var hdr [8]byte
		binary.BigEndian.PutUint32(hdr[:], n)
		binary.BigEndian.PutUint32(hdr[4:], pgproto3.ProtocolVersion30)
		nc.Write(hdr[:])
		// Closed with the rest unread: an EOF or a reset, and not a byte.
		if rest, _ := io.ReadAll(nc); len(rest) != 0 {
			t.Errorf("startup length %d: read %q; want the connection closed", n, rest)
		}
	}
	// Exactly 10000 bytes is accepted.
	params := map[string]string{"user": "big", "application_name": strings.Repeat("a", 10000-4-4-len("user\x00big\x00application_name\x00\x00\x00"))}
	pkt, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: params}).Encode(nil)
	if len(pkt) != 10000 {
		t.Fatalf("packet of %d bytes", len(pkt))
	}
	nc := rawDial(t, ts)
	nc.Write(pkt)
	fe := pgproto3.NewFrontend(nc, nc)
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("10000-byte startup packet: %v", err)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
}

func TestMessageSizeLimit(t *testing.T) {
	ts := startServerWith(t, Options{MaxMessageSize: 1 << 20})
	rc := rawConnect(t, ts)
	// A query just under the limit runs...
	rc.query(t, "SELECT 1"+strings.Repeat(" ", 1<<20-len("SELECT 1")-1))
	rc.until(t, 'Z')
	// ...one over it, or a header claiming gigabytes, ends the connection with
	// an error and no allocation of what the header claims.
	for _, n := range []uint32{1<<20 + 5, 0x7fffffff} {
		rc := rawConnect(t, ts)
		var hdr [5]byte
		hdr[0] = 'Q'
		binary.BigEndian.PutUint32(hdr[1:], n)
		rc.nc.Write(hdr[:])
		msg, err := rc.fe.Receive()
		e, ok := msg.(*pgproto3.ErrorResponse)
		if err != nil || !ok || e.Severity != "FATAL" || e.Code != "08P01" ||
			e.Message != fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes", n-4, 1<<20) {
			t.Errorf("length %d: %#v, %v", n, msg, err)
		}
		if _, err := rc.fe.Receive(); err == nil {
			t.Error("connection still open")
		}
	}
}

// TestExtendedProtocolErrorDiscardsUntilSync: after a malformed message in the
// extended protocol, the server skips messages up to Sync, answers
// ReadyForQuery there, and the connection goes on.
func TestExtendedProtocolErrorDiscardsUntilSync(t *testing.T) {
	ts := startServer(t)
	rc := rawConnect(t, ts)
	var out []byte
	out = append(out, 'P', 0, 0, 0, 7, 'x', 'y', 'z') // Parse without its terminators
	out, _ = (&pgproto3.Bind{}).Encode(out)
	out, _ = (&pgproto3.Execute{}).Encode(out)
	out = append(out, 'H', 0, 0, 0, 4)             // Flush: skipped too
	out = append(out, 'B', 0, 0, 0, 6, 0xff, 0xff) // a malformed Bind while skipping
	out, _ = (&pgproto3.Sync{}).Encode(out)
	out, _ = (&pgproto3.Query{String: "SELECT 1"}).Encode(out)
	rc.nc.Write(out)
	var got []string
	for len(got) < 6 {
		msg, err := rc.fe.Receive()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			got = append(got, "E "+m.Severity+" "+m.Code+" "+m.Message)
		case *pgproto3.ReadyForQuery:
			got = append(got, "Z")
		case *pgproto3.DataRow:
			got = append(got, "D "+string(m.Values[0]))
		default:
			got = append(got, fmt.Sprintf("%T", m))
		}
	}
	want := "[E ERROR 08P01 invalid Parse message Z *pgproto3.RowDescription D 1 *pgproto3.CommandComplete Z]"
	if fmt.Sprint(got) != want {
		t.Errorf("got  %v\nwant %s", got, want)
	}
}

func TestUnknownMessageTypeIsFatal(t *testing.T) {
	ts := startServer(t)
	rc := rawConnect(t, ts)
	rc.nc.Write([]byte{'p', 0, 0, 0, 4})
	msg, err := rc.fe.Receive()
	if e, ok := msg.(*pgproto3.ErrorResponse); err != nil || !ok || e.Severity != "FATAL" || e.Code != "08P01" {
		t.Errorf("got %#v, %v", msg, err)
	}
}

func TestAuthenticationTimeout(t *testing.T) {
	ts := startServerWith(t, Options{Auth: AuthSCRAM, Users: testUsers(t), StartupTimeout: 100 * time.Millisecond})
	nc := rawDial(t, ts)
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice"}})
	fe.Flush()
	if msg, err := fe.Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := msg.(*pgproto3.AuthenticationSASL); !ok {
		t.Fatalf("got %#v", msg)
	}
	// The client never answers: the server hangs up.
	if _, err := fe.Receive(); err == nil {
		t.Error("the server waited past its authentication timeout")
	}
}

func TestCancelLimiter(t *testing.T) {
	var l cancelLimiter
	now := time.Unix(1000, 0)
	for i := range cancelHostBurst {
		if !l.allow("a", now) {
			t.Fatalf("failure %d refused", i)
		}
		l.failed("a", now)
	}
	if l.allow("a", now) {
		t.Error("host a allowed after its burst of failures")
	}
	if !l.allow("b", now) {
		t.Error("another host is refused")
	}
	if !l.allow("a", now.Add(time.Second)) {
		t.Error("host a not allowed again after a second")
	}
	// The global bucket stops many hosts together.
	now = now.Add(time.Minute)
	for i := range cancelGlobalBurst {
		l.failed(fmt.Sprint("h", i), now)
	}
	if l.allow("fresh", now) {
		t.Error("a fresh host allowed past the global limit")
	}
	if !l.allow("fresh", now.Add(time.Second)) {
		t.Error("global bucket does not refill")
	}
	if got := limitKey(&net.TCPAddr{IP: net.ParseIP("2001:db8::1:2:3:4")}); got != "2001:db8::" {
		t.Errorf("IPv6 key %s", got)
	}
}

// TestFailedCancelsAreRateLimited: after a burst of wrong keys from one host,
// even the right key from it is ignored for a while.
func TestFailedCancelsAreRateLimited(t *testing.T) {
	ts := startServer(t)
	c := connect(t, ts, "")
	pc := c.PgConn()
	for range cancelHostBurst {
		cancelRaw(t, ts, pc.PID(), []byte{1, 2, 3, 4})
	}
	// Until the bucket refills, a correct request from this host is ignored.
	if ts.cancels.allow("127.0.0.1", time.Now()) {
		t.Fatal("127.0.0.1 still allowed after its failures")
	}
	// Once it refills, cancelling works again.
	ts.cancels.mu.Lock()
	ts.cancels.hosts["127.0.0.1"].tokens = cancelHostBurst
	ts.cancels.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(testCtx(t), "block")
		done <- err
	}()
	waitFor(t, ts.be.blockStart, "the statement to start")
	if err := pc.CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	wantPgError(t, "cancel", waitFor(t, done, "the cancel"), "ERROR", "57014", "canceling statement due to user request")
	waitFor(t, ts.be.rowsClosed, "rows to close")
}

// cancelRaw sends one CancelRequest and waits for the server to hang up.
func cancelRaw(t *testing.T, ts *testServer, pid uint32, key []byte) {
	t.Helper()
	nc := rawDial(t, ts)
	pkt, _ := (&pgproto3.CancelRequest{ProcessID: pid, SecretKey: key}).Encode(nil)
	nc.Write(pkt)
	io.Copy(io.Discard, nc)
}

func TestRedact(t *testing.T) {
	got := redact("CREATE USER a IDENTIFIED BY 'it''s secret'; ALTER USER b identified  by 'x' ; SELECT 'IDENTIFIED'")
	want := "CREATE USER a IDENTIFIED BY '***'; ALTER USER b identified  by '***' ; SELECT 'IDENTIFIED'"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

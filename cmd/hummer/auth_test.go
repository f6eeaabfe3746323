package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
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
)

// writeTestCerts writes a CA and a server certificate it signed, for
// 127.0.0.1 and localhost, and returns their files.
func writeTestCerts(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, typ string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", der), write("server.key", "EC PRIVATE KEY", keyDER)
}

// startServeEnv runs `hummer serve` with args and extra environment until the
// test ends, waiting until its port accepts connections.
func startServeEnv(t *testing.T, bin, addr string, env []string, args ...string) {
	t.Helper()
	exited := startProcessEnv(t, bin, env,
		append([]string{"serve", "--pg-addr", addr, "--data-dir", filepath.Join(t.TempDir(), "data")}, args...)...)
	waitUntil(t, "PostgreSQL port", exited, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// psqlAs runs psql as user with env (PGPASSWORD, PGSSLMODE...) and returns its
// combined output and error.
func psqlAs(addr, user string, env []string, script string) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", "-X", "-q", "-A", "-t", "-w", "-v", "ON_ERROR_STOP=0", "-v", "VERBOSITY=verbose",
		"-h", host, "-p", port, "-U", user, "-d", "hummer", "-f", "-")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader("\\set VERBOSITY verbose\n" + script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAuthPsql starts `hummer serve` with SCRAM and TLS and drives it with the
// real psql: a wrong password is refused with 28P01, the right one lets in,
// sslmode=require and verify-full go over TLS, plain text is refused, and a
// user without privileges gets 42501 on DROP TABLE but can SELECT what was
// granted.
func TestAuthPsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	bin := buildHummer(t)
	caFile, certFile, keyFile := writeTestCerts(t)
	addr := freeAddr(t)
	startServeEnv(t, bin, addr, []string{"HUMMER_PASSWORD=root secret"},
		"--auth", "scram-sha-256", "--tls-cert", certFile, "--tls-key", keyFile, "--tls-required")
	tlsEnv := func(password string) []string {
		return []string{"PGPASSWORD=" + password, "PGSSLMODE=verify-full", "PGSSLROOTCERT=" + caFile}
	}

	// Wrong password: refused, 28P01 (psql prints no code for connection
	// failures; pgx shows it).
	out, err := psqlAs(addr, "hummer", tlsEnv("wrong"), "SELECT 1;")
	if err == nil || !strings.Contains(out, `password authentication failed for user "hummer"`) {
		t.Errorf("wrong password: %v\n%s", err, out)
	}
	pgxURL := func(userinfo, params string) string {
		return fmt.Sprintf("postgres://%s@%s/hummer?sslrootcert=%s&%s", userinfo, addr, caFile, params)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, who := range []string{"hummer:wrong", "nobody:root%20secret"} {
		_, err := pgx.Connect(ctx, pgxURL(who, "sslmode=verify-full"))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Errorf("%s: %v, want 28P01", who, err)
		}
	}
	// Plain text is refused.
	out, err = psqlAs(addr, "hummer", []string{"PGPASSWORD=root secret", "PGSSLMODE=disable"}, "SELECT 1;")
	if err == nil || !strings.Contains(out, "SSL required") {
		t.Errorf("sslmode=disable: %v\n%s", err, out)
	}

	// The right password over TLS, with sslmode=require and verify-full.
	for _, mode := range []string{"require", "verify-full"} {
		env := []string{"PGPASSWORD=root secret", "PGSSLMODE=" + mode, "PGSSLROOTCERT=" + caFile}
		out, err := psqlAs(addr, "hummer", env, "SELECT 40 + 2;\n\\conninfo\n")
		if err != nil || !strings.HasPrefix(out, "42\n") || !strings.Contains(out, "SSL connection") {
			t.Errorf("sslmode=%s: %v\n%s", mode, err, out)
		}
	}

	// The superuser makes a table, a user, and grants it SELECT on it only.
	data := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(data, []byte("1\n2\n3\n"), 0o644)
	out, err = psqlAs(addr, "hummer", tlsEnv("root secret"), fmt.Sprintf(`
CREATE TABLE t (a BIGINT) ENGINE=file CONNECTION='file://%s?format=csv';
CREATE TABLE secret (a BIGINT) ENGINE=file CONNECTION='file://%s?format=csv';
CREATE USER bob IDENTIFIED BY 'bob pw';
GRANT SELECT ON t TO bob;
`, data, data))
	if err != nil || strings.Contains(out, "ERROR") {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	out, _ = psqlAs(addr, "bob", tlsEnv("bob pw"), `
SELECT sum(a) FROM t;
DROP TABLE t;
SELECT a FROM secret;
CREATE TABLE mine (a BIGINT) ENGINE=memory CONNECTION='memory://mine';
GRANT SELECT ON secret TO bob;
SHOW GRANTS;
`)
	if !strings.HasPrefix(out, "6\n") {
		t.Errorf("bob's SELECT of t:\n%s", out)
	}
	for _, want := range []string{
		"ERROR:  42501: permission denied for table t",
		"ERROR:  42501: permission denied for table secret",
		`ERROR:  42501: permission denied to create "mine"`,
		"ERROR:  42501: permission denied: only a superuser may GRANT",
		"GRANT SELECT ON t TO bob",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bob's session lacks %q:\n%s", want, out)
		}
	}
	// The table is still there; bob's password is bob's only.
	if out, err := psqlAs(addr, "hummer", tlsEnv("root secret"), "SELECT count(*) FROM t;"); err != nil || out != "3\n" {
		t.Errorf("after bob's DROP TABLE: %v %q", err, out)
	}
	if out, err := psqlAs(addr, "bob", tlsEnv("root secret"), "SELECT 1;"); err == nil {
		t.Errorf("bob with the superuser's password got in:\n%s", out)
	}

	// A quoted role name keeps its case, as in PostgreSQL 15 (the same
	// script there prints the same lines): it logs in as written, its
	// lower-case spelling is another role, and ALTER and DROP find it.
	out, err = psqlAs(addr, "hummer", tlsEnv("root secret"), `
CREATE ROLE "Mixed Case" WITH LOGIN PASSWORD 'mc pw';
CREATE ROLE Carol LOGIN;
SELECT rolname FROM pg_roles WHERE rolname IN ('Mixed Case', 'carol', 'Carol', 'mixed case') ORDER BY 1;
GRANT SELECT ON t TO "Mixed Case";
`)
	if err != nil || out != "Mixed Case\ncarol\n" {
		t.Errorf("CREATE ROLE \"Mixed Case\": %v\n%q", err, out)
	}
	if out, err := psqlAs(addr, "Mixed Case", tlsEnv("mc pw"), "SELECT current_user, count(*) FROM t;"); err != nil || out != "Mixed Case|3\n" {
		t.Errorf("login as \"Mixed Case\": %v\n%s", err, out)
	}
	if out, err := psqlAs(addr, "mixed case", tlsEnv("mc pw"), "SELECT 1;"); err == nil || !strings.Contains(out, `"mixed case"`) {
		t.Errorf("login as \"mixed case\": %v\n%s", err, out)
	}
	out, err = psqlAs(addr, "hummer", tlsEnv("root secret"), `
ALTER ROLE "Mixed Case" PASSWORD 'new pw';
DROP ROLE "mixed case";
DROP ROLE "Mixed Case", carol;
SELECT count(*) FROM pg_roles WHERE rolname IN ('Mixed Case', 'carol');
`)
	if err != nil || !strings.Contains(out, `ERROR:  42704: role "mixed case" does not exist`) || !strings.HasSuffix(out, "\n0\n") {
		t.Errorf("ALTER and DROP ROLE \"Mixed Case\": %v\n%s", err, out)
	}
}

// TestAuthDefaults: on a loopback address the server trusts (existing users),
// elsewhere it defaults to SCRAM and will not start without a superuser
// password.
func TestAuthDefaults(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	bin := buildHummer(t)

	// Not loopback, no password: the server refuses to start.
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	cmd := exec.Command(bin, "serve", "--pg-addr", "0.0.0.0:"+port, "--data-dir", filepath.Join(t.TempDir(), "d"))
	cmd.Env = append(os.Environ(), "HUMMER_PASSWORD=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "the superuser hummer has no password") {
		t.Errorf("serve on 0.0.0.0 without a password: %v\n%s", err, out)
	}

	// Not loopback, with a password: SCRAM.
	startServeEnv(t, bin, "0.0.0.0:"+port, []string{"HUMMER_PASSWORD=pw"})
	addr := "127.0.0.1:" + port
	if out, err := psqlAs(addr, "hummer", []string{"PGPASSWORD=wrong"}, "SELECT 1;"); err == nil || !strings.Contains(out, "password authentication failed") {
		t.Errorf("0.0.0.0, wrong password: %v\n%s", err, out)
	}
	if out, err := psqlAs(addr, "hummer", []string{"PGPASSWORD=pw"}, "SELECT 1;"); err != nil || out != "1\n" {
		t.Errorf("0.0.0.0, right password: %v\n%s", err, out)
	}

	// Loopback: trust, but only for users that exist.
	local := freeAddr(t)
	startServeEnv(t, bin, local, nil)
	if out, err := psqlAs(local, "hummer", nil, "SELECT 1;"); err != nil || out != "1\n" {
		t.Errorf("loopback trust: %v\n%s", err, out)
	}
	if out, err := psqlAs(local, "nobody", nil, "SELECT 1;"); err == nil || !strings.Contains(out, `role "nobody" does not exist`) {
		t.Errorf("loopback, unknown user: %v\n%s", err, out)
	}
}

// TestStatementTimeoutPsql: SET statement_timeout cancels a statement that
// runs too long with 57014.
func TestStatementTimeoutPsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	addr := startHummer(t)
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "%d\n", i)
	}
	data := filepath.Join(t.TempDir(), "n.csv")
	os.WriteFile(data, []byte(b.String()), 0o644)
	out, _ := psqlErr(addr, fmt.Sprintf(`\set VERBOSITY verbose
CREATE TABLE n (a BIGINT) ENGINE=file CONNECTION='file://%s?format=csv';
SET statement_timeout = '300ms';
SELECT count(*) FROM (SELECT a, 0 AS k FROM n) x JOIN (SELECT a, 0 AS k FROM n) y ON x.k = y.k;
SELECT count(*) FROM n;
`, data))
	if !strings.Contains(out, "ERROR:  57014: canceling statement due to statement timeout") || !strings.HasSuffix(out, "20000\n") {
		t.Errorf("psql:\n%s", out)
	}
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apiClient calls a server's JSON API, logged in as user (none when "").
type apiClient struct {
	t              *testing.T
	base           string
	user, password string
}

// do sends a request and returns its status and decoded JSON body.
func (c apiClient) do(method, path, contentType, body string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(data, &v); err != nil {
			c.t.Fatalf("%s %s: %v in %q", method, path, err, data)
		}
	}
	return resp.StatusCode, v
}

// TestDashboardAPI runs a server whose HTTP endpoint is off loopback: every
// path but the probes asks for a user of the PostgreSQL port; logged in, the API
// shows a continuous job's graph and checkpoints, EXPLAINs a query into its
// three graphs, and cancels the job, which only a superuser may (as KILL).
func TestDashboardAPI(t *testing.T) {
	bin := buildHummer(t)
	pgAddr := freeAddr(t)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	exited := startProcess(t, bin, "serve", "--pg-addr", pgAddr, "--http-addr", "0.0.0.0:"+port,
		"--superuser-password", "s3cret", "--checkpoint-interval", "200ms", "--data-dir", filepath.Join(t.TempDir(), "data"))
	base := "http://127.0.0.1:" + port
	waitUntil(t, "the server's readiness", exited, func() bool { return probe(base+"/readyz") == 200 })

	anon := apiClient{t: t, base: base}
	admin := apiClient{t: t, base: base, user: "hummer", password: "s3cret"}
	for _, path := range []string{"/", "/api/overview", "/metrics"} {
		if code, _ := anon.do("GET", path, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a password = %d, want 401", path, code)
		}
	}
	if code, _ := (apiClient{t: t, base: base, user: "hummer", password: "wrong"}).do("GET", "/api/overview", "", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/overview with a wrong password = %d, want 401", code)
	}
	code, ov := admin.do("GET", "/api/overview", "", "")
	if code != 200 {
		t.Fatalf("GET /api/overview as hummer = %d", code)
	}
	if tms, _ := ov["taskmanagers"].([]any); len(tms) != 1 {
		t.Errorf("overview lists %d TaskManagers, want the 1 local one: %v", len(tms), ov)
	}
	if code, _ := admin.do("GET", "/", "", ""); code != 200 {
		t.Errorf("GET / (the dashboard) as hummer = %d, want 200", code)
	}

	psql(t, pgAddr, `CREATE TABLE bids (auction BIGINT, price BIGINT) ENGINE=nexmark CONNECTION='nexmark://bid?rate=2000';
CREATE TABLE cheap (auction BIGINT, price BIGINT) ENGINE=blackhole;
INSERT INTO cheap SELECT auction, price FROM bids WHERE price < 1000;
CREATE USER bob PASSWORD 'pw';`)
	var job map[string]any
	waitUntil(t, "a checkpoint in job 1's history", exited, func() bool {
		_, job = admin.do("GET", "/api/jobs/1", "", "")
		h, _ := job["checkpoint_history"].([]any)
		return len(h) > 0
	})
	vertices, _ := job["vertices"].([]any)
	var ops []string
	for _, v := range vertices {
		for _, op := range v.(map[string]any)["operators"].([]any) {
			ops = append(ops, op.(string))
		}
	}
	if all := strings.Join(ops, "\n"); !strings.Contains(all, "source bids [nexmark]") || !strings.Contains(all, "filter") {
		t.Errorf("job 1's vertices list the operators %q, want its nexmark source and its filter", ops)
	}
	if s, _ := job["statement"].(string); strings.TrimSuffix(s, ";") != "INSERT INTO cheap SELECT auction, price FROM bids WHERE price < 1000" {
		t.Errorf("job 1's statement = %q", job["statement"])
	}

	code, plan := admin.do("POST", "/api/explain", "application/json", `{"sql": "SELECT auction, COUNT(*) FROM bids GROUP BY auction"}`)
	text, _ := plan["plan"].(string)
	if code != 200 || !strings.Contains(text, "StreamGraph") || !strings.Contains(text, "JobGraph") || !strings.Contains(text, "ExecutionGraph") {
		t.Errorf("POST /api/explain = %d %q, want the three graphs", code, text)
	}
	if code, body := admin.do("POST", "/api/explain", "application/json", `{"sql": "SELEC 1"}`); code != 400 || body["error"] == nil {
		t.Errorf("POST /api/explain of bad SQL = %d %v, want 400 with the error", code, body)
	}

	// A form post, which another site's page could send, is refused.
	if code, _ := admin.do("POST", "/api/jobs/1/cancel", "application/x-www-form-urlencoded", ""); code != http.StatusUnsupportedMediaType {
		t.Errorf("a form POST to cancel = %d, want 415", code)
	}
	bob := apiClient{t: t, base: base, user: "bob", password: "pw"}
	if code, _ := bob.do("GET", "/api/overview", "", ""); code != 200 {
		t.Errorf("GET /api/overview as bob = %d, want 200", code)
	}
	if code, body := bob.do("POST", "/api/jobs/1/cancel", "application/json", "{}"); code != http.StatusForbidden {
		t.Errorf("bob cancelling hummer's job = %d %v, want 403 (KILL is a superuser's)", code, body)
	}
	if code, body := admin.do("POST", "/api/jobs/1/cancel", "application/json", "{}"); code != 200 || body["state"] != "cancelled" {
		t.Errorf("hummer cancelling job 1 = %d %v, want 200 and cancelled", code, body)
	}
	if code, _ := admin.do("GET", "/api/jobs/99", "", ""); code != 404 {
		t.Errorf("GET /api/jobs/99 = %d, want 404", code)
	}
}

// TestDashboardTLS: with --http-tls the HTTP endpoint serves HTTPS with the
// PostgreSQL port's certificate (--tls-cert, --tls-key), and refuses plain HTTP.
func TestDashboardTLS(t *testing.T) {
	bin := buildHummer(t)
	caFile, certFile, keyFile := writeTestCerts(t)
	httpAddr := freeAddr(t)
	startServeEnv(t, bin, freeAddr(t), nil, "--http-addr", httpAddr, "--tls-cert", certFile, "--tls-key", keyFile, "--http-tls")
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, path := range []string{"/healthz", "/api/overview"} {
		resp, err := client.Get("https://" + httpAddr + path)
		if err != nil {
			t.Fatalf("GET https://%s%s: %v", httpAddr, path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET https://%s%s = %d, want 200", httpAddr, path, resp.StatusCode)
		}
	}
	if resp, err := http.Get("http://" + httpAddr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the HTTPS endpoint answered 200")
		}
	}
}

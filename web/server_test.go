package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// get fetches url and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestProbes: /healthz answers 200 all along; /readyz 503 with the reason until
// the process is ready, 200 then, and 503 again when it no longer is.
func TestProbes(t *testing.T) {
	ready := NewReadiness("loading the catalog")
	s, err := Listen(Config{Addr: "127.0.0.1:0", Ready: ready.Check})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr().String()
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz before ready = %d %q, want 200 ok", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "loading the catalog") {
		t.Errorf("/readyz before ready = %d %q, want 503 with the reason", code, body)
	}
	ready.Ready()
	if code, body := get(t, base+"/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz when ready = %d %q, want 200 ok", code, body)
	}
	ready.NotReady("lost the JobManager")
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "lost the JobManager") {
		t.Errorf("/readyz after NotReady = %d %q, want 503 with the reason", code, body)
	}
	if code, _ := get(t, base+"/nothing"); code != 404 {
		t.Errorf("/nothing = %d, want 404", code)
	}
}

// TestListenTaken: an address in use is an error naming the flag.
func TestListenTaken(t *testing.T) {
	s, err := Listen(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Listen(Config{Addr: s.Addr().String()}); err == nil || !strings.Contains(err.Error(), "--http-addr") {
		t.Errorf("Listen on a taken address: err = %v, want one naming --http-addr", err)
	}
}

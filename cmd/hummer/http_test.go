package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// probe returns the HTTP status of url, 0 when nothing answers.
func probe(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestHealthProbes: a TaskManager started before its JobManager is live but not
// ready; it turns ready once it has registered, and unready again when the
// JobManager goes away. The JobManager is ready once it serves.
func TestHealthProbes(t *testing.T) {
	bin := buildHummer(t)
	pgAddr, rpcAddr, jmHTTP, tmHTTP := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	tm := startProcess(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "1", "--http-addr", tmHTTP,
		"--data-dir", filepath.Join(t.TempDir(), "tm"))
	waitUntil(t, "the TaskManager's /healthz", tm, func() bool { return probe("http://"+tmHTTP+"/healthz") == 200 })
	if code := probe("http://" + tmHTTP + "/readyz"); code != 503 {
		t.Errorf("TaskManager /readyz with no JobManager = %d, want 503", code)
	}

	jm := startKillable(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr, "--http-addr", jmHTTP,
		"--data-dir", filepath.Join(t.TempDir(), "jm"))
	waitUntil(t, "the JobManager's /readyz", jm.exited, func() bool { return probe("http://"+jmHTTP+"/readyz") == 200 })
	if code := probe("http://" + jmHTTP + "/healthz"); code != 200 {
		t.Errorf("JobManager /healthz = %d, want 200", code)
	}
	waitUntil(t, "the TaskManager's /readyz once registered", tm, func() bool { return probe("http://"+tmHTTP+"/readyz") == 200 })

	jm.kill(t)
	waitUntil(t, "the TaskManager unready without its JobManager", tm, func() bool { return probe("http://"+tmHTTP+"/readyz") == 503 })
}

// TestHTTPAddrTaken: the default address taken by another process does not
// keep a server from starting, while an address asked for with --http-addr must
// be had.
func TestHTTPAddrTaken(t *testing.T) {
	bin := buildHummer(t)
	ln, err := net.Listen("tcp", defaultHTTPAddr)
	if err != nil {
		// Another process has it, which is as good, but it may let go of it
		// at any time: the explicit case below needs it held.
		t.Logf("%s is taken by another process: %v", defaultHTTPAddr, err)
	} else {
		defer ln.Close()
	}
	pgAddr := freeAddr(t)
	exited := startProcess(t, bin, "serve", "--pg-addr", pgAddr, "--data-dir", filepath.Join(t.TempDir(), "d"))
	waitUntil(t, "the PostgreSQL port", exited, func() bool {
		_, err := psqlErr(pgAddr, "SELECT 1;")
		return err == nil
	})
	if ln == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "serve", "--pg-addr", freeAddr(t), "--http-addr", defaultHTTPAddr,
		"--data-dir", filepath.Join(t.TempDir(), "e")).CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), "--http-addr") {
		t.Errorf("serve --http-addr on a taken address: err = %v, output:\n%s\nwant a failure naming --http-addr", err, out)
	}
}

// TestReadyWhileJobsWait: a JobManager restarted with no TaskManager yet is
// ready (its TaskManagers may find it only once it is), and its overview lists
// the recorded continuous job as waiting for slots.
func TestReadyWhileJobsWait(t *testing.T) {
	bin := buildHummer(t)
	pgAddr, rpcAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	dir := filepath.Join(t.TempDir(), "jm")
	jmArgs := []string{"jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr, "--http-addr", httpAddr, "--data-dir", dir}
	jm := startKillable(t, bin, jmArgs...)
	tm := startKillable(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "2", "--data-dir", filepath.Join(t.TempDir(), "tm"))
	waitUntil(t, "a registered TaskManager", jm.exited, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 2;")
		return err == nil && !strings.Contains(out, "ERROR")
	})
	psql(t, pgAddr, `CREATE TABLE bids (price BIGINT) ENGINE=nexmark CONNECTION='nexmark://bid?rate=100';
CREATE TABLE sink (price BIGINT) ENGINE=blackhole;
INSERT INTO sink SELECT price FROM bids;`)
	tm.kill(t)
	jm.kill(t)

	again := startProcess(t, bin, jmArgs...)
	waitUntil(t, "the restarted JobManager's readiness", again, func() bool { return probe("http://"+httpAddr+"/readyz") == 200 })
	var ov struct {
		Jobs []struct{ ID, State string } `json:"jobs"`
	}
	waitUntil(t, "job 1 waiting for slots in the overview", again, func() bool {
		apiGet(t, "http://"+httpAddr+"/api/overview", &ov)
		return len(ov.Jobs) == 1 && ov.Jobs[0].ID == "1" && ov.Jobs[0].State == "waiting for slots"
	})
}

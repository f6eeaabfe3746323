package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNetworkIsolation shows the paper's per-edge networks: two TaskManagers in
// two network namespaces joined by two separate links, "stream" and "batch". A
// job that sets network = 'stream' must move its data over the stream link and
// leave the batch link quiet, and the other way round. The JobManager stays in the
// host namespace, reached over a third (control) link from each namespace.
//
// It needs root and iproute2 (CI runs as root and installs iproute2).
func TestNetworkIsolation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test builds network namespaces and must run as root (as CI does)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("iproute2 is not installed (CI installs it)")
	}
	sfx := strconv.Itoa(os.Getpid() % 100000)
	nsA, nsB := "hmr-a"+sfx, "hmr-b"+sfx
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	inNS := func(ns string, args ...string) string {
		t.Helper()
		return run(append([]string{"ip", "netns", "exec", ns}, args...)...)
	}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", nsA).Run()
		exec.Command("ip", "netns", "del", nsB).Run()
	})
	run("ip", "netns", "add", nsA)
	run("ip", "netns", "add", nsB)
	// veth names are at most 15 bytes: the suffix keeps parallel runs apart.
	link := func(a, nsa, addrA, b, nsb, addrB string) {
		run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
		for _, end := range []struct{ name, ns, addr string }{{a, nsa, addrA}, {b, nsb, addrB}} {
			if end.ns != "" {
				run("ip", "link", "set", end.name, "netns", end.ns)
				inNS(end.ns, "ip", "addr", "add", end.addr, "dev", end.name)
				inNS(end.ns, "ip", "link", "set", end.name, "up")
			} else {
				run("ip", "addr", "add", end.addr, "dev", end.name)
				run("ip", "link", "set", end.name, "up")
			}
		}
	}
	for _, ns := range []string{nsA, nsB} {
		inNS(ns, "ip", "link", "set", "lo", "up")
		// No IPv6 chatter (router solicitations) on the links being measured.
		inNS(ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6")
	}
	link("hc"+sfx+"a", "", "10.77.0.1/30", "hc"+sfx+"A", nsA, "10.77.0.2/30")  // control, host <-> A
	link("hc"+sfx+"b", "", "10.77.0.5/30", "hc"+sfx+"B", nsB, "10.77.0.6/30")  // control, host <-> B
	link("hs"+sfx+"A", nsA, "10.77.1.1/24", "hs"+sfx+"B", nsB, "10.77.1.2/24") // stream, A <-> B
	link("hb"+sfx+"A", nsA, "10.77.2.1/24", "hb"+sfx+"B", nsB, "10.77.2.2/24") // batch, A <-> B

	bin := buildHummer(t)
	pgAddr := freeAddr(t)
	rpcPort := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	jm := startProcess(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", "0.0.0.0:"+rpcPort,
		"--data-dir", filepath.Join(t.TempDir(), "jm"))
	for _, tm := range []struct{ ns, control, jmHost, stream, batch string }{
		{nsA, "10.77.0.2", "10.77.0.1", "10.77.1.1", "10.77.2.1"},
		{nsB, "10.77.0.6", "10.77.0.5", "10.77.1.2", "10.77.2.2"},
	} {
		startProcess(t, "ip", "netns", "exec", tm.ns, bin, "taskmanager",
			"--jobmanager", tm.jmHost+":"+rpcPort, "--slots", "1", "--data-addr", tm.control+":0",
			"--network", "stream="+tm.stream+":0", "--network", "batch="+tm.batch+":0",
			"--data-dir", filepath.Join(t.TempDir(), tm.ns))
	}
	waitUntil(t, "two registered TaskManagers", jm, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 2;")
		return err == nil && !strings.Contains(out, "ERROR")
	})
	kjv, _ := filepath.Abs("../../data/kjv.txt")
	psql(t, pgAddr, fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s'", kjv))

	txBytes := func(ns, dev string) int64 {
		out := inNS(ns, "cat", "/sys/class/net/"+dev+"/statistics/tx_bytes")
		n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	traffic := func() (stream, batch int64) {
		return txBytes(nsA, "hs"+sfx+"A") + txBytes(nsB, "hs"+sfx+"B"),
			txBytes(nsA, "hb"+sfx+"A") + txBytes(nsB, "hb"+sfx+"B")
	}
	query := `SELECT word, COUNT(*) FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t
		WHERE word <> '' GROUP BY word`
	// The exchange between the two TaskManagers moves about half of each one's
	// partial counts (tens of thousands of words): hundreds of KB. A quiet link
	// carries at most a few packets of its own.
	const busy, quiet = 200 << 10, 16 << 10
	for _, network := range []string{"stream", "batch"} {
		s0, b0 := traffic()
		out := psql(t, pgAddr, fmt.Sprintf("SET parallelism = 2;\nSET network = '%s';\n%s;", network, query))
		if rows := strings.Count(out, "\n"); rows < 10000 {
			t.Fatalf("network %s: WordCount returned %d rows", network, rows)
		}
		s1, b1 := traffic()
		onStream, onBatch := s1-s0, b1-b0
		t.Logf("network %s: %d bytes on the stream link, %d on the batch link", network, onStream, onBatch)
		used, idle := onStream, onBatch
		if network == "batch" {
			used, idle = onBatch, onStream
		}
		if used < busy || idle > quiet {
			t.Errorf("job on network %q: %d bytes on its link, %d on the other; want >= %d and <= %d",
				network, used, idle, busy, quiet)
		}
	}
}

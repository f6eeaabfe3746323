package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshotsEnv names a directory the browser test saves its screenshots in
// (docs/ keeps the README's; `make test` gives bin/screenshots, so a CI run
// keeps them beside the binary); by default they go to the test's temporary
// directory.
const screenshotsEnv = "HUMMER_SCREENSHOTS"

// TestDashboardInBrowser drives the dashboard in Debian's headless Chromium
// over the DevTools protocol (chromedp), against a cluster of one JobManager
// and two TaskManagers running a continuous job (a view over a Nexmark stream)
// and a finished batch job (WordCount into a blackhole): the overview lists
// both TaskManagers and jobs; the continuous job's page draws its vertices,
// places its subtasks on both TaskManagers, lists a checkpoint, shows its rows
// read rising between two polls, and its Cancel button cancels it; the EXPLAIN
// box shows a query's three graphs.
func TestDashboardInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("this test needs Debian's chromium (.ci/run installs it): ", err)
	}
	shots := os.Getenv(screenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildHummer(t)
	pgAddr, rpcAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	jm := startProcess(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr, "--http-addr", httpAddr,
		"--checkpoint-interval", "500ms", "--data-dir", filepath.Join(t.TempDir(), "jm"))
	for i := 0; i < 2; i++ {
		startProcess(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "2",
			"--data-dir", filepath.Join(t.TempDir(), fmt.Sprintf("tm%d", i)))
	}
	waitUntil(t, "two registered TaskManagers", jm, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 4;")
		return err == nil && !strings.Contains(out, "ERROR")
	})
	kjv, _ := filepath.Abs("../../data/kjv.txt")
	psql(t, pgAddr, fmt.Sprintf(`CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s';
CREATE TABLE words (word TEXT) ENGINE=blackhole;
SET parallelism = 2;
INSERT INTO words SELECT unnest(string_split(lower(line), ' ')) FROM docs;
CREATE TABLE bids (auction BIGINT, price BIGINT) ENGINE=nexmark CONNECTION='nexmark://bid?rate=2000';
CREATE VIEW top AS SELECT auction, COUNT(*) AS n, MAX(price) AS high FROM bids GROUP BY auction;`, kjv))
	// Job 1 is the batch INSERT, job 2 keeps the view.
	var tms []string
	var ov struct {
		TaskManagers []struct{ ID string } `json:"taskmanagers"`
	}
	apiGet(t, "http://"+httpAddr+"/api/overview", &ov)
	for _, tm := range ov.TaskManagers {
		tms = append(tms, tm.ID)
	}
	sort.Strings(tms)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	base := "http://" + httpAddr + "/"
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond),
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("the page never showed %s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The overview.
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible("#jobs")); err != nil {
		t.Fatal(err)
	}
	poll("both jobs, the batch one finished", `document.querySelectorAll("#jobs tr[data-job]").length == 2 &&
		document.querySelector('#jobs tr[data-job="1"] .job-state').textContent == "finished"`)
	if got := eval(`[...document.querySelectorAll("#taskmanagers tr[data-tm]")].map(r => r.dataset.tm).sort().join(",")`); got != strings.Join(tms, ",") || len(tms) != 2 {
		t.Errorf("the overview lists TaskManagers %q, want the API's two %q", got, tms)
	}
	// The batch job read every line of the file (31102, wc -l).
	if got := eval(`document.querySelector('#jobs tr[data-job="1"] .rows-in').dataset.value`); got != "31102" {
		t.Errorf("the overview says the batch job read %s rows, want 31102", got)
	}
	shot("dashboard-overview.png")

	// The continuous job's page.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"#/jobs/2"), chromedp.WaitVisible("#graph svg")); err != nil {
		t.Fatal(err)
	}
	poll("a checkpoint row", `document.querySelectorAll("#checkpoints tr.checkpoint").length > 0`)
	var job struct {
		Vertices []struct {
			ID        int      `json:"id"`
			Operators []string `json:"operators"`
		} `json:"vertices"`
	}
	apiGet(t, "http://"+httpAddr+"/api/jobs/2", &job)
	if got := eval(`String(document.querySelectorAll("#graph g.vertex").length)`); got != fmt.Sprint(len(job.Vertices)) || len(job.Vertices) < 2 {
		t.Errorf("the graph draws %s vertices, the job has %d (want 2 or more)", got, len(job.Vertices))
	}
	graph := eval(`document.querySelector("#graph").textContent`)
	for _, want := range []string{"source bids [nexmark]", "hash_agg", "view", "hash["} {
		if !strings.Contains(graph, want) {
			t.Errorf("the graph does not show %q:\n%s", want, graph)
		}
	}
	if got := eval(`[...new Set([...document.querySelectorAll("#subtasks td.tm")].map(td => td.textContent))].sort().join(",")`); got != strings.Join(tms, ",") {
		t.Errorf("the subtasks run on %q, want both TaskManagers %q", got, tms)
	}
	// The fused operators' rates come from the TaskManagers' heartbeats.
	poll("a fused operator's rows per second", `[...document.querySelectorAll("#graph .oprate")].some(e => /^[1-9]/.test(e.textContent))`)
	first := eval(`document.querySelector("#rows-in").dataset.value`)
	poll("rows read rising past "+first, fmt.Sprintf(`Number(document.querySelector("#rows-in").dataset.value) > %s`, first))
	if got := eval(`document.querySelector("#statement").textContent`); !strings.HasPrefix(got, "CREATE VIEW top AS SELECT auction") {
		t.Errorf("the job page shows the statement %q", got)
	}
	shot("dashboard-job.png")

	// Cancel with the button (its confirm answered yes).
	eval(`window.confirm = () => true; ""`)
	if err := chromedp.Do(ctx, chromedp.Click("#cancel")); err != nil {
		t.Fatal(err)
	}
	poll("the job cancelled", `document.querySelector("h1[data-state]").dataset.state == "cancelled"`)
	var after struct {
		State string `json:"state"`
	}
	apiGet(t, "http://"+httpAddr+"/api/jobs/2", &after)
	if after.State != "cancelled" {
		t.Errorf("after Cancel the API says job 2 is %q", after.State)
	}

	// The EXPLAIN box.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"#/explain"), chromedp.WaitVisible("#explain-sql"),
		chromedp.SetValue("#explain-sql", "SELECT auction, COUNT(*) FROM bids GROUP BY auction"), chromedp.Click("#explain-run")); err != nil {
		t.Fatal(err)
	}
	poll("the three graphs", `["StreamGraph", "JobGraph", "ExecutionGraph"].every(g => document.querySelector("#explain-out").textContent.includes(g))`)
}

// apiGet decodes the JSON of GET url into v.
func apiGet(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

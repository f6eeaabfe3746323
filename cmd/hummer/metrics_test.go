package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
)

// scrape reads url's Prometheus text exposition with expfmt.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return mf
}

// series identifies one series: its name and its labels, sorted.
func series(name string, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// labelled returns the value of the series of family name whose labels include
// want, and whether there is one.
func labelled(mf map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := mf[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// counters maps every counter series, and every histogram's count, to its value.
func counters(mf map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range mf {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[series(name, m)] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[series(name+"_count", m)] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// processList returns SHOW PROCESSLIST's rows by job id, each as its columns.
func processList(t *testing.T, pgAddr string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(psql(t, pgAddr, "SHOW PROCESSLIST;")), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) > 5 {
			rows[cols[0]] = cols
		}
	}
	return rows
}

// TestMetrics scrapes /metrics of a server running a finished WordCount INSERT
// job and a continuous Nexmark job with checkpoints, parsing it with expfmt:
// the metrics are there, the finished job's counts equal both a count of the
// input file and SHOW PROCESSLIST's, and no counter goes down between scrapes.
func TestMetrics(t *testing.T) {
	bin := buildHummer(t)
	pgAddr, httpAddr := freeAddr(t), freeAddr(t)
	exited := startProcess(t, bin, "serve", "--pg-addr", pgAddr, "--http-addr", httpAddr, "--checkpoint-interval", "200ms",
		"--data-dir", filepath.Join(t.TempDir(), "data"))
	waitUntil(t, "the server's readiness", exited, func() bool { return probe("http://"+httpAddr+"/readyz") == 200 })
	url := "http://" + httpAddr + "/metrics"

	kjv, _ := filepath.Abs("../../data/kjv.txt")
	text, err := os.ReadFile(kjv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(text), "\n")
	words := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		for _, w := range strings.Split(strings.ToLower(line), " ") {
			if w != "" {
				words[w] = true
			}
		}
	}
	psql(t, pgAddr, fmt.Sprintf(`CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s';
CREATE TABLE counts (word TEXT, n BIGINT) ENGINE=blackhole;
INSERT INTO counts SELECT word, COUNT(*) FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t WHERE word <> '' GROUP BY word;`, kjv))
	var wc []string
	waitUntil(t, "the WordCount job finished", exited, func() bool {
		wc = processList(t, pgAddr)["1"]
		return wc != nil && wc[2] == "finished"
	})
	mf := scrape(t, url)
	job1 := map[string]string{"job_id": "1"}
	for name, want := range map[string]int{"hummer_job_records_in_total": lines, "hummer_job_records_out_total": len(words)} {
		got, ok := labelled(mf, name, job1)
		col := map[string]string{"hummer_job_records_in_total": wc[4], "hummer_job_records_out_total": wc[5]}[name]
		if !ok || int(got) != want || strconv.Itoa(int(got)) != col {
			t.Errorf("%s of job 1 = %v (present: %v), want %d (counted in Go) and SHOW PROCESSLIST's %s", name, got, ok, want, col)
		}
	}
	// The sources' tasks read every line between them.
	var sourceRows float64
	for _, m := range mf["hummer_task_records_in_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && strings.HasPrefix(l.GetValue(), "source") {
				sourceRows += m.GetCounter().GetValue()
			}
		}
	}
	if int(sourceRows) != lines {
		t.Errorf("hummer_task_records_in_total of the source tasks sums to %v, want %d lines", sourceRows, lines)
	}

	// Inside the fused source chain, the source and the projection after it
	// each emit one row per line.
	opRows := map[string]float64{}
	for _, m := range mf["hummer_operator_records_out_total"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["job_id"] == "1" && l["vertex"] == "0" {
			opRows[l["operator"]+" "+l["kind"]] += m.GetCounter().GetValue()
		}
	}
	if int(opRows["0 source"]) != lines || int(opRows["1 project"]) != lines {
		t.Errorf("rows out of job 1's source and projection: %v, want %d each", opRows, lines)
	}
	// Each of those operators' own time, per subtask, adds up to at most its
	// task's busy time; the sources read for some.
	opBusy, taskBusy := map[string]float64{}, map[string]float64{}
	var sourceBusy float64
	for name, into := range map[string]map[string]float64{"hummer_operator_busy_seconds_total": opBusy, "hummer_task_busy_seconds_total": taskBusy} {
		for _, m := range mf[name].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["job_id"] == "1" && l["vertex"] == "0" {
				into[l["subtask"]] += m.GetCounter().GetValue()
				if l["kind"] == "source" {
					sourceBusy += m.GetCounter().GetValue()
				}
			}
		}
	}
	if len(opBusy) == 0 || len(opBusy) != len(taskBusy) || sourceBusy <= 0 {
		t.Errorf("job 1's source chain: operators' busy seconds by subtask %v, tasks' %v, the sources' %v; want both for every subtask, the sources' more than 0", opBusy, taskBusy, sourceBusy)
	}
	for st, s := range opBusy {
		if s > taskBusy[st]+1e-9 { // a nanosecond for the float sums
			t.Errorf("job 1's source chain, subtask %s: its operators' busy seconds add up to %v, more than its task's %v", st, s, taskBusy[st])
		}
	}

	psql(t, pgAddr, `CREATE TABLE bids (auction BIGINT, price BIGINT) ENGINE=nexmark CONNECTION='nexmark://bid?rate=5000';
CREATE TABLE bids_out (auction BIGINT, price BIGINT) ENGINE=blackhole;
INSERT INTO bids_out SELECT auction, price FROM bids WHERE price > 100;`)
	waitUntil(t, "a completed checkpoint of job 2 in the histograms", exited, func() bool {
		n, ok := labelled(scrape(t, url), "hummer_job_checkpoint_duration_seconds", map[string]string{"job_id": "2"})
		return ok && n > 0
	})
	first := scrape(t, url)
	for _, name := range []string{
		"hummer_taskmanagers", "hummer_slots", "hummer_job_info", "hummer_job_start_time_seconds",
		"hummer_job_records_in_total", "hummer_job_records_out_total", "hummer_job_late_rows_total",
		"hummer_job_bad_records_total", "hummer_job_restarts_total", "hummer_job_checkpoints_total",
		"hummer_job_checkpoint_duration_seconds", "hummer_job_checkpoint_size_bytes",
		"hummer_task_records_in_total", "hummer_task_records_out_total", "hummer_task_batches_in_total",
		"hummer_task_batches_out_total", "hummer_task_busy_seconds_total", "hummer_task_idle_seconds_total",
		"hummer_task_backpressured_seconds_total", "hummer_task_queue_length", "hummer_task_info",
		"hummer_pg_connections", "hummer_pg_connections_total", "hummer_pg_statement_duration_seconds",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if first[name] == nil {
			t.Errorf("/metrics has no %s", name)
		}
	}
	in1, _ := labelled(first, "hummer_job_records_in_total", map[string]string{"job_id": "2"})
	var second map[string]*dto.MetricFamily
	waitUntil(t, "job 2 reading more rows", exited, func() bool {
		second = scrape(t, url)
		in2, _ := labelled(second, "hummer_job_records_in_total", map[string]string{"job_id": "2"})
		return in2 > in1
	})
	after := counters(second)
	for s, v := range counters(first) {
		if w, ok := after[s]; ok && w < v {
			t.Errorf("counter %s went down from %v to %v", s, v, w)
		}
	}
	// The finished job's counters are still SHOW PROCESSLIST's.
	pl := processList(t, pgAddr)
	for name, col := range map[string]int{"hummer_job_records_in_total": 4, "hummer_job_records_out_total": 5} {
		got, _ := labelled(second, name, job1)
		if strconv.Itoa(int(got)) != pl["1"][col] {
			t.Errorf("%s of job 1 = %v, SHOW PROCESSLIST says %s", name, got, pl["1"][col])
		}
	}
	if n, _ := labelled(second, "hummer_pg_connections_total", nil); n < 3 {
		t.Errorf("hummer_pg_connections_total = %v, want at least the 3 psql runs before the scrape", n)
	}
}

// TestReadmeScrapeConfig scrapes as the README's Prometheus config says: the
// JobManager off loopback with the basic_auth it gives (its user and password
// made the superuser's), and a TaskManager started with --http-addr, each at
// the default metrics path; both answer a parseable exposition.
func TestReadmeScrapeConfig(t *testing.T) {
	var cfg struct {
		ScrapeConfigs []struct {
			JobName     string `yaml:"job_name"`
			MetricsPath string `yaml:"metrics_path"`
			BasicAuth   *struct {
				Username, Password string
			} `yaml:"basic_auth"`
			StaticConfigs []struct{ Targets []string } `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(readmeBlock(t, "scrape_configs:")), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.ScrapeConfigs) != 2 || cfg.ScrapeConfigs[0].BasicAuth == nil || cfg.ScrapeConfigs[1].BasicAuth != nil {
		t.Fatalf("the README's scrape config: %+v; want a JobManager's with basic_auth, then TaskManagers' without", cfg)
	}
	jmCfg, tmCfg := cfg.ScrapeConfigs[0], cfg.ScrapeConfigs[1]
	for _, c := range cfg.ScrapeConfigs {
		if c.MetricsPath != "" || len(c.StaticConfigs) == 0 || !strings.HasSuffix(c.StaticConfigs[0].Targets[0], ":8081") {
			t.Errorf("scrape job %s: %+v; want the default path and targets on port 8081", c.JobName, c)
		}
	}
	bin := buildHummer(t)
	rpcAddr := freeAddr(t)
	_, jmPort, _ := net.SplitHostPort(freeAddr(t))
	tmHTTP := freeAddr(t)
	jm := startProcess(t, bin, "jobmanager", "--pg-addr", freeAddr(t), "--rpc-addr", rpcAddr, "--http-addr", "0.0.0.0:"+jmPort,
		"--superuser-password", jmCfg.BasicAuth.Password, "--data-dir", filepath.Join(t.TempDir(), "jm"))
	tm := startProcess(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--http-addr", tmHTTP, "--slots", "1",
		"--data-dir", filepath.Join(t.TempDir(), "tm"))
	waitUntil(t, "the JobManager's readiness", jm, func() bool { return probe("http://127.0.0.1:"+jmPort+"/readyz") == 200 })
	waitUntil(t, "the TaskManager's readiness", tm, func() bool { return probe("http://"+tmHTTP+"/readyz") == 200 })

	get := func(url, user, password string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", url, nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := get("http://127.0.0.1:"+jmPort+"/metrics", jmCfg.BasicAuth.Username, jmCfg.BasicAuth.Password)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || mf["hummer_taskmanagers"] == nil {
		t.Errorf("scraping the JobManager as %s: %s, %v; want 200 with hummer_taskmanagers", jmCfg.JobName, resp.Status, err)
	}
	resp, err = get("http://"+tmHTTP+"/metrics", "", "")
	if err != nil {
		t.Fatal(err)
	}
	mf, err = parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || mf["go_goroutines"] == nil {
		t.Errorf("scraping the TaskManager as %s: %s, %v; want 200 with go_goroutines", tmCfg.JobName, resp.Status, err)
	}
	if v, _ := labelled(mf, "hummer_taskmanager_registered", nil); v != 1 {
		t.Errorf("the ready TaskManager's hummer_taskmanager_registered = %v, want 1", v)
	}
	if v, _ := labelled(mf, "hummer_taskmanager_slots", nil); v != 1 {
		t.Errorf("hummer_taskmanager_slots = %v, want its --slots 1", v)
	}
}

// TestTaskMetricsSetting: SET task_metrics = off runs a session's next jobs
// without their tasks' time accounting, which EXPLAIN ANALYZE then shows as
// nothing busy and no operator's time, while their rows are still counted; on
// again, they have it.
func TestTaskMetricsSetting(t *testing.T) {
	addr := startTestServer(t)
	const query = "EXPLAIN ANALYZE SELECT auction, COUNT(*) FROM bid GROUP BY auction;"
	psql(t, addr, `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT) ENGINE=nexmark CONNECTION='nexmark://bid?events=100000&rate=0';`)
	// busyAndRows sums busy_ms and rows_in over the plan's tasks.
	busyAndRows := func(plan string) (busy float64, rows int64) {
		for _, line := range strings.Split(plan, "\n") {
			if !strings.Contains(line, "busy_ms=") {
				continue
			}
			for _, f := range strings.Fields(line) {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "busy_ms":
					x, _ := strconv.ParseFloat(v, 64)
					busy += x
				case "rows_in":
					n, _ := strconv.ParseInt(v, 10, 64)
					rows += n
				}
			}
		}
		return busy, rows
	}
	off := psql(t, addr, "SET parallelism = 1;\nSET task_metrics = off;\n"+query)
	if busy, rows := busyAndRows(off); busy != 0 || rows == 0 || strings.Contains(off, "time_ms=") {
		t.Errorf("task_metrics off: %.1f ms busy, %d rows in; want 0, more than 0 and no operator's time:\n%s", busy, rows, off)
	}
	on := psql(t, addr, "SET parallelism = 1;\nSET task_metrics = on;\n"+query)
	if busy, rows := busyAndRows(on); busy <= 0 || rows == 0 || !strings.Contains(on, "time_ms=") {
		t.Errorf("task_metrics on: %.1f ms busy, %d rows in; want both more than 0, and the operators' times:\n%s", busy, rows, on)
	}
}

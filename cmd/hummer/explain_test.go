package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestExplainAnalyzeOperatorTimes: EXPLAIN ANALYZE lists under each task the
// operators of its fused chain, each with the rows it emitted and its own
// time; the times of a task's operators add up to at most its busy time, and
// the chains that read and aggregate the bids took some.
func TestExplainAnalyzeOperatorTimes(t *testing.T) {
	addr := startClusterServer(t, 2)
	out := psql(t, addr, `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT) ENGINE=nexmark CONNECTION='nexmark://bid?events=200000&rate=0';
SET parallelism = 2;
EXPLAIN ANALYZE SELECT auction, COUNT(*) FROM bid WHERE price > 10 GROUP BY auction;`)
	type task struct {
		line   string
		busy   float64
		ops    []string
		times  []float64
		chains int // operators its name lists
	}
	var tasks []*task
	field := func(line, key string) (float64, bool) {
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				x, err := strconv.ParseFloat(v, 64)
				return x, err == nil
			}
		}
		return 0, false
	}
	for _, line := range strings.Split(out, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "task ") && strings.Contains(line, "busy_ms="):
			busy, _ := field(line, "busy_ms")
			name, _, _ := strings.Cut(strings.SplitN(trimmed, " ", 3)[2], "[")
			tasks = append(tasks, &task{line: line, busy: busy, chains: len(strings.Split(name, " -> "))})
		case len(tasks) > 0 && strings.HasPrefix(line, "      ") && strings.Contains(line, "time_ms="):
			tk := tasks[len(tasks)-1]
			ms, ok := field(line, "time_ms")
			if !ok {
				t.Fatalf("no time in %q", line)
			}
			tk.ops, tk.times = append(tk.ops, trimmed), append(tk.times, ms)
		}
	}
	if len(tasks) != 4 {
		t.Fatalf("want 4 tasks (2 scans, 2 aggregations):\n%s", out)
	}
	var sourceMs, aggMs float64
	for _, tk := range tasks {
		if len(tk.ops) != tk.chains || tk.chains < 2 {
			t.Errorf("task %q: %d operators timed, its name lists %d:\n%s", tk.line, len(tk.ops), tk.chains, out)
			continue
		}
		sum := 0.0
		for i, ms := range tk.times {
			sum += ms
			switch {
			case strings.HasPrefix(tk.ops[i], "source "):
				sourceMs += ms
			case strings.HasPrefix(tk.ops[i], "hash_agg "):
				aggMs += ms
			}
		}
		// Each figure is rounded to 0.1 ms.
		if sum > tk.busy+0.05*float64(len(tk.times)+1) {
			t.Errorf("task %q: its operators' times add up to %.1f ms, more than its busy %.1f ms:\n%s", tk.line, sum, tk.busy, out)
		}
	}
	if sourceMs <= 0 || aggMs <= 0 {
		t.Errorf("the sources took %.1f ms and the aggregations %.1f ms, want both more than 0:\n%s", sourceMs, aggMs, out)
	}
}

package latency

import (
	"fmt"
	pathpkg "path"
	"strings"
)

// Readme renders the README's latency section from r; resultsDir is where the
// plot is, relative to the README.
func (r *Report) Readme(resultsDir string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	m, s := r.Machine, r.Setup
	p("## Latency: Kafka in, a continuous Hummer job, Kafka out (issue 5)")
	p("")
	p("<!-- From %s, written by `make bench` or `make bench-latency` (bench/cmd/latency; the section is bench/latency/readme.go). -->", pathpkg.Join(resultsDir, ResultsFile))
	p("")
	p("![End-to-end latency p50 and p99 per rate, Hummer against the broker's round trip](%s)", pathpkg.Join(resultsDir, PlotFile))
	p("")
	p("Run of %s on %d x %s, Linux %s: per rate, %.0f s of warm-up and %.0f s measured per path in %d segments, the two paths alternating; %.0f s in all.",
		r.Date, m.CPUs, m.CPUModel, m.Kernel, s.WarmupS, s.MeasureS, s.Rounds, r.DurationS)
	wait := "the kernel keeps no CPU pressure figures here"
	if m.CPUWaitS >= 0 {
		wait = fmt.Sprintf("for %.1f s of them some runnable task waited for a core (`/proc/pressure/cpu`)", m.CPUWaitS)
	}
	p("**The figures are noisy**: the machine has %d cores and is shared with other engineers' builds and tests. While the segments ran (%.0f s), %s, the hypervisor stole %.1f s, and the load average went from %.2f to %.2f; "+
		"the bench process (broker, producer, consumers) used %.1f CPU s and Hummer's server %.1f. The spread of the segments' own p99s shows how much a figure moves within the run.",
		m.CPUs, m.RunsS, wait, m.StealS, m.LoadAvg, m.LoadAvgAfter, m.BenchCPUS, m.HummerCPUS)
	p("")
	p("| rate (lines/s) | path | lines | lost | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | p99 per segment ms | p99 − raw p99 ms | Hummer CPU |")
	p("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, row := range r.Summary {
		diff, cpu := "", ""
		if row.Path == PathHummer {
			diff = fmt.Sprintf("%+.3f", row.P99Ms-r.row(row.Rate, PathRaw).P99Ms)
			cpu = fmt.Sprintf("%.0f%%", row.HummerCPUPct)
		}
		p("| %d | %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f–%.2f | %s | %s |", row.Rate, row.Path, row.Lines, row.Lost,
			row.P50Ms, row.P90Ms, row.P99Ms, row.P999Ms, row.MaxMs, row.SegP99Min, row.SegP99Max, diff, cpu)
	}
	p("")
	p("| goal | target | %s |", strings.Join(mapRates(s.Rates, func(rate int) string { return fmt.Sprintf("%d lines/s", rate) }), " | "))
	p("| --- | --- |%s", strings.Repeat(" ---: |", len(s.Rates)))
	for _, name := range []string{goalDiffName, goalPaper, goalLost} {
		target := ""
		cells := mapRates(s.Rates, func(rate int) string {
			for _, g := range r.Goals {
				if g.Name == name && g.Rate == rate {
					target = g.Target
					unit := " ms"
					if name == goalLost {
						unit = ""
					}
					return fmt.Sprintf("%g%s %s", g.Value, unit, map[bool]string{true: "✅", false: "❌"}[g.Pass])
				}
			}
			return ""
		})
		if target != "" {
			p("| %s | %s | %s |", name, target, strings.Join(cells, " | "))
		}
	}
	p("")
	p("What runs, all on loopback:")
	p("")
	p("- **Broker**: franz-go's kfake (%s), started in the bench process: one in-memory Kafka-protocol broker, topics `in`, `out` and `raw` of one partition each. Nothing goes to disk and nothing is replicated, so the absolute figures measure clients and engine, not a real broker's storage.", r.Versions.KFake)
	p("- **Producer**: one franz-go `kgo` client (%s) for both paths, `ProducerLinger(0)` (franz-go's default lingers 10 ms), otherwise its defaults (acks from all replicas, idempotent). A 1 ms ticker paces it: each tick sends the lines due by then at the rate (1, 5 or 20 lines per tick at 1k, 5k, 20k lines/s). Each line is `ts=<unix ns> seq=<n>`, its time taken as it is handed to the client.", r.Versions.FranzGo)
	p("- **hummer**: the repository's `hummer serve`, driven with pgx over the PostgreSQL wire (simple protocol): `%s`, `SET parallelism = %s` (the input topic has one partition), then the continuous job, which returns at once and runs until the server stops. The job reads `in` and writes `out` with the kafka connector (`connectors/kafka`, segmentio/kafka-go's Reader and Writer).", s.Tables, s.Parallelism)
	p("  ```sql")
	p("  %s", s.Query)
	p("  ```")
	p("- **raw**: the same producer into `raw`, read back from `raw`: the broker's own produce → consume round trip, one hop. Hummer's path has two (into `in`, out of `out`) plus the engine.")
	p("- **Consumers**: one `kgo` client per topic read (`out`, `raw`), from the start, fetch minimum 1 byte (the broker answers as soon as a record arrives). Latency = the time the poll returned − the line's `ts`, both read from one monotonic clock in the bench process.")
	p("- **Segments**: per rate, one warm-up segment per path (not measured; the first also waits for the job to start), then %d rounds of one %.0f s segment per path, the order alternating. After each segment the driver waits for all its lines before the next starts, so the paths never run at once.", s.Rounds, s.MeasureS/float64(max(s.Rounds, 1)))
	p("- **Lines** are counted by sequence number: any still missing at the end of the run count as **lost** and fail it; %d came back twice.", r.Duplicates)
	if r.ServerWarnings > 0 {
		p("- Hummer's log holds %d warnings; the first: `%s`", r.ServerWarnings, strings.ReplaceAll(r.ServerWarningsSample[0], "`", "'"))
	} else {
		p("- Hummer's log holds no warnings (the kafka connector logs its clients' errors there, such as a fetch that timed out).")
	}
	p("- Percentiles are nearest-rank over every line of a path's measured segments. **Hummer CPU** is the server's user + system time over its segments' wall time, in percent of one core. The job once the runs were done, from `SHOW PROCESSLIST`: `%s`.", r.Job)
	p("")
	return b.String()
}

func mapRates(rates []int, f func(rate int) string) []string {
	out := make([]string, len(rates))
	for i, r := range rates {
		out[i] = f(r)
	}
	return out
}

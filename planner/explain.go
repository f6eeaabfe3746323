package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hummer-db/hummer/exec"
)

// Explain prints the three graphs of a query as text, under the headings
// StreamGraph, JobGraph and ExecutionGraph, so a reader sees which operators
// were fused into one task and where each task runs. With metrics (EXPLAIN
// ANALYZE, after the job ran) each task also shows its TaskManager, the rows it
// took in and gave out, the bytes it sent over network channels and where its
// time went, and under it each operator of its fused chain, the rows it
// emitted and its own time.
func Explain(sg *StreamGraph, jg *exec.JobGraph, eg *exec.ExecutionGraph, metrics map[exec.TaskID]*exec.TaskMetrics) string {
	var b strings.Builder
	b.WriteString("StreamGraph\n")
	for _, n := range sg.Nodes {
		fmt.Fprintf(&b, "  #%d %s: %s (parallelism=%s)\n", n.ID, n.Kind, n.Op.Label, parText(n.Parallelism))
	}
	for _, e := range sg.Edges {
		fmt.Fprintf(&b, "  #%d -> #%d input=%d %s%s\n", e.From, e.To, e.Input, e.Partition, lateEdge(e.Late))
	}
	b.WriteString("JobGraph\n")
	for _, v := range jg.Vertices {
		fmt.Fprintf(&b, "  V%d (parallelism=%s): %s\n", v.ID, parText(v.Parallelism), v.Name)
		for _, op := range v.Chain {
			fmt.Fprintf(&b, "      %s\n", op.Label)
		}
	}
	for _, e := range jg.Edges {
		fmt.Fprintf(&b, "  V%d -> V%d input=%d %s%s\n", e.From, e.To, e.Input, e.Partition, lateEdge(e.Late))
	}
	b.WriteString("ExecutionGraph\n")
	for _, t := range eg.Tasks {
		fmt.Fprintf(&b, "  task %s %s on %s", t.ID, t.Name, t.Slot)
		if m := metrics[t.ID]; m != nil {
			fmt.Fprintf(&b, " tm=%s rows_in=%d rows_out=%d net_bytes_out=%d",
				t.Slot.TaskManager, m.RowsIn.Load(), m.RowsOut.Load(), m.NetBytesOut.Load())
			// Where its time went (exec.TaskMetrics): working, waiting on
			// an empty inbox, blocked on a full queue downstream.
			fmt.Fprintf(&b, " busy_ms=%.1f idle_ms=%.1f backpressured_ms=%.1f", nanosToMillis(m.BusyNanos.Load()),
				nanosToMillis(m.IdleNanos.Load()), nanosToMillis(m.BackpressureNanos.Load()))
			if bad := m.BadRecords.Load(); bad > 0 {
				fmt.Fprintf(&b, " bad_records=%d", bad)
			}
			b.WriteString("\n")
			// Each operator of its fused chain: the rows it emitted and the
			// time it took itself, not counting the operators after it.
			chain := vertexChain(jg, t.ID.Vertex)
			rows, nanos := m.ChainRowsOut(), m.ChainNanos()
			if len(nanos) == len(chain) {
				for i, op := range chain {
					fmt.Fprintf(&b, "      %s:", op.Label)
					if len(rows) == len(chain) {
						fmt.Fprintf(&b, " rows_out=%d", rows[i])
					}
					fmt.Fprintf(&b, " time_ms=%.1f\n", nanosToMillis(nanos[i]))
				}
			}
			continue
		}
		b.WriteString("\n")
	}
	for _, nt := range eg.NetTasks {
		slot := "its producer's slot " + nt.Slot.String()
		if nt.Own {
			slot = nt.Slot.String()
		}
		fmt.Fprintf(&b, "  network task of %s for V%d input=%d on %s\n", nt.From, nt.ToVertex, nt.Input, slot)
	}
	for _, line := range channelSummary(eg) {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// vertexChain returns the operators of vertex id of jg, its source first.
func vertexChain(jg *exec.JobGraph, id int) []exec.OperatorSpec {
	for _, v := range jg.Vertices {
		if v.ID == id {
			return v.Chain
		}
	}
	return nil
}

// parText prints a planned parallelism; the JobManager chooses "auto" ones when
// the job is submitted (the ExecutionGraph shows its choice).
func parText(p int) string {
	if p == exec.AutoParallelism {
		return "auto"
	}
	return fmt.Sprint(p)
}

// channelSummary lists, per JobGraph edge, how many channels it expands to and
// how many of them cross TaskManagers.
func channelSummary(eg *exec.ExecutionGraph) []string {
	type key struct{ from, to, input int }
	type count struct {
		n, network int
		part       exec.Partition
	}
	counts := map[key]*count{}
	for _, e := range eg.Edges {
		k := key{e.From.Vertex, e.To.Vertex, e.Input}
		c := counts[k]
		if c == nil {
			c = &count{part: e.Partition}
			counts[k] = c
		}
		c.n++
		if e.Network {
			c.network++
		}
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].from != keys[j].from {
			return keys[i].from < keys[j].from
		}
		return keys[i].to < keys[j].to
	})
	lines := make([]string, len(keys))
	for i, k := range keys {
		c := counts[k]
		lines[i] = fmt.Sprintf("V%d -> V%d input=%d %s: %d channel(s), %d over the network",
			k.from, k.to, k.input, c.part, c.n, c.network)
		if c.network > 0 {
			lines[i] += " (" + netTaskText(eg, k.from, k.to, k.input) + ")"
		}
	}
	return lines
}

// ExplainDot prints the StreamGraph as Graphviz, each JobVertex a cluster around
// the operators fused into it.
func ExplainDot(sg *StreamGraph) string {
	jg, vertexOf := fuse(sg)
	var b strings.Builder
	b.WriteString("digraph hummer {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	nodeOfVertex := make([][]int, len(jg.Vertices))
	for n, v := range vertexOf {
		nodeOfVertex[v] = append(nodeOfVertex[v], n)
	}
	for _, v := range jg.Vertices {
		fmt.Fprintf(&b, "  subgraph cluster_v%d {\n    label=%q;\n    style=rounded;\n", v.ID,
			fmt.Sprintf("V%d: %d task(s)", v.ID, v.Parallelism))
		for _, n := range nodeOfVertex[v.ID] {
			fmt.Fprintf(&b, "    n%d [label=%q];\n", n, sg.Nodes[n].Op.Label)
		}
		b.WriteString("  }\n")
	}
	for _, e := range sg.Edges {
		style := ""
		if vertexOf[e.From] == vertexOf[e.To] {
			style = ", style=bold, color=gray40"
		}
		if e.Late {
			style = ", style=dashed"
		}
		fmt.Fprintf(&b, "  n%d -> n%d [label=%q%s];\n", e.From, e.To, e.Partition.String()+lateEdge(e.Late), style)
	}
	b.WriteString("}\n")
	return b.String()
}

// netTaskText says how the sending side of the edge from -> to runs: fused into
// its producers, or in network tasks, with how many took a slot of their own.
func netTaskText(eg *exec.ExecutionGraph, from, to, input int) string {
	n, own := 0, 0
	for _, nt := range eg.NetTasks {
		if nt.From.Vertex == from && nt.ToVertex == to && nt.Input == input {
			n++
			if nt.Own {
				own++
			}
		}
	}
	if n == 0 {
		return "network tasks: fused"
	}
	return fmt.Sprintf("network tasks: own, %d of %d in a slot of their own", own, n)
}

func nanosToMillis(n int64) float64 { return float64(n) / 1e6 }

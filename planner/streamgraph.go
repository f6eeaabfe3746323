// Package planner turns a bound logical plan into the paper's graphs: a
// StreamGraph (one node per operator), a JobGraph (nodes fused into chains that
// run in one task) and, through the JobManager, an ExecutionGraph; and it prints
// each of them for EXPLAIN.
package planner

import (
	"github.com/hummer-db/hummer/exec"
)

// NodeKind is the paper's classification of a StreamNode.
type NodeKind string

const (
	SourceNode   NodeKind = "Source"
	OneInputNode NodeKind = "OneInput"
	TwoInputNode NodeKind = "TwoInput"
)

// StreamNode is one operator of the StreamGraph.
type StreamNode struct {
	ID          int
	Op          exec.OperatorSpec
	Parallelism int
	// MaxParallelism is 1 for operators that must see every row in one place
	// (a global sort or limit); 0 means no cap.
	MaxParallelism int
	Kind           NodeKind
}

// StreamEdge connects node From's output to input Input of node To.
type StreamEdge struct {
	From, To, Input int
	Partition       exec.Partition
	// Late says the edge carries From's late rows (exec.JobEdge.Late), not
	// its output; it does not keep From from fusing with its successor.
	Late bool
}

// StreamGraph is the planner's first physical form: every operator its own node.
// Nodes are in topological order and Nodes[i].ID == i.
type StreamGraph struct {
	Nodes []*StreamNode
	Edges []*StreamEdge
}

// in returns the edges into node id.
func (g *StreamGraph) in(id int) []*StreamEdge {
	var es []*StreamEdge
	for _, e := range g.Edges {
		if e.To == id {
			es = append(es, e)
		}
	}
	return es
}

// outDegree returns the number of edges out of node id that carry its
// output.
func (g *StreamGraph) outDegree(id int) int {
	n := 0
	for _, e := range g.Edges {
		if e.From == id && !e.Late {
			n++
		}
	}
	return n
}

// Fuse builds the JobGraph: a node joins its predecessor's chain when the edge
// between them is Forward, both have the same parallelism, the predecessor has no
// other successor and the node no other predecessor (Arroyo's chaining rules).
// Fused operators then call each other directly in one task: no queue, no copy.
func Fuse(sg *StreamGraph) *exec.JobGraph {
	jg, _ := fuse(sg)
	return jg
}

// fuse builds the JobGraph and says which vertex each stream node went into.
func fuse(sg *StreamGraph) (*exec.JobGraph, []int) {
	jg := &exec.JobGraph{}
	vertexOf := make([]int, len(sg.Nodes))
	for _, n := range sg.Nodes {
		ins := sg.in(n.ID)
		if len(ins) == 1 {
			e := ins[0]
			from := sg.Nodes[e.From]
			if chainable(sg, e, from, n) {
				v := jg.Vertices[vertexOf[from.ID]]
				v.Chain = append(v.Chain, n.Op)
				v.Name += " -> " + n.Op.Kind
				if n.MaxParallelism > 0 && (v.MaxParallelism == 0 || n.MaxParallelism < v.MaxParallelism) {
					v.MaxParallelism = n.MaxParallelism
				}
				vertexOf[n.ID] = v.ID
				continue
			}
		}
		v := &exec.JobVertex{
			ID:             len(jg.Vertices),
			Name:           n.Op.Kind,
			Chain:          []exec.OperatorSpec{n.Op},
			Parallelism:    n.Parallelism,
			MaxParallelism: n.MaxParallelism,
		}
		jg.Vertices = append(jg.Vertices, v)
		vertexOf[n.ID] = v.ID
		for _, e := range ins {
			jg.Edges = append(jg.Edges, &exec.JobEdge{
				From: vertexOf[e.From], To: v.ID, Input: e.Input, Partition: e.Partition, Late: e.Late,
			})
		}
	}
	return jg, vertexOf
}

// chainable is the fusion rule: a forward edge between nodes of equal
// parallelism, the only edge out of from and the only edge into to.
func chainable(sg *StreamGraph, e *StreamEdge, from, to *StreamNode) bool {
	return e.Partition.Kind == exec.Forward && from.Parallelism == to.Parallelism &&
		sg.outDegree(from.ID) == 1 && len(sg.in(to.ID)) == 1
}

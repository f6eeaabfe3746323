package exec

import (
	"encoding/json"
	"fmt"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// OperatorSpec names one operator of a JobGraph and configures it. Config is the
// operator's own JSON, decoded by its factory, so a graph planned by a client can
// be serialised and rebuilt on any TaskManager.
type OperatorSpec struct {
	// Kind selects the factory: a built-in operator ("filter", "project",
	// "hash_agg", ...), "source" or "sink".
	Kind string `json:"kind"`
	// Label is the one-line description EXPLAIN prints.
	Label  string          `json:"label"`
	Config json.RawMessage `json:"config,omitempty"`
	// Data is bulk input of the operator's own (the rows a "snapshot"
	// source emits), kept beside Config: a graph deployed in this process
	// hands it over as it is, where bytes in Config are base64 in JSON,
	// encoded as the query is planned and decoded again, scanned whole, as
	// its task is built (TPC-H q15's SELECT read its view's 10000 rows
	// twice, ~6 ms of CPU before its job started). Over the network it
	// travels in the graph's JSON like the rest.
	Data []byte `json:"data,omitempty"`
	// Out is the schema of the batches this operator emits.
	Out types.Schema `json:"out"`
}

// RowIDColumn names a last column of a stored table's scan Schema that is
// not one of the table's: the source fills it with each row's id in the
// version it scans, by which UPDATE and DELETE name the rows they change
// (connectors/table).
const RowIDColumn = "$rowid"

// ConnectorSpec configures a source or sink: the connector named by the table's
// ENGINE, its CONNECTION URL and the table's columns. It is the Config of a
// "source" or "sink" OperatorSpec.
type ConnectorSpec struct {
	Connector string       `json:"connector"`
	URL       string       `json:"url"`
	Schema    types.Schema `json:"schema"`
	// Columns, when not nil, are the positions in Schema the query reads
	// (projection push-down); the source emits only these, in this order.
	Columns []int `json:"columns,omitempty"`
	// Filter, when set, is a condition over Schema's positions that every row
	// the query keeps satisfies: a source may skip input it knows fails it
	// (a stored table's segments whose value ranges cannot match), but need
	// not; the query filters its rows either way.
	Filter *expr.Expr `json:"filter,omitempty"`
	// Key are the positions in Schema of the table's PRIMARY KEY: a sink
	// upserts rows by that key (a Delete removes the key) instead of appending
	// them, and a source reads its input as keyed (a Kafka tombstone is a key's
	// delete, not a bad record). Empty for an append-only table.
	Key []int `json:"key,omitempty"`
	// Watermark, for a source that keeps its own watermarks (a Kafka table's,
	// one per partition), is the table's watermark expression over the
	// columns the source emits: the source emits the least over its
	// partitions of each one's largest value of it (exec.Watermark signals),
	// and Idle when none holds any back.
	Watermark *expr.Expr `json:"watermark,omitempty"`
}

// PartitionKind says how an edge spreads the batches of its producer's subtasks
// over its consumer's subtasks.
type PartitionKind string

const (
	// Forward sends subtask i's output to subtask i; both sides have equal parallelism.
	Forward PartitionKind = "forward"
	// Hash sends each row to the subtask chosen by the hash of its key columns.
	Hash PartitionKind = "hash"
	// Rebalance spreads whole batches round-robin; into one subtask it gathers.
	Rebalance PartitionKind = "rebalance"
	// Broadcast sends every batch to every subtask.
	Broadcast PartitionKind = "broadcast"
)

// Partition is an edge's partitioning: the kind, and for Hash the key columns of
// the producer's output.
type Partition struct {
	Kind PartitionKind `json:"kind"`
	Keys []int         `json:"keys,omitempty"`
}

func (p Partition) String() string {
	if p.Kind == Hash {
		return fmt.Sprintf("hash%v", p.Keys)
	}
	return string(p.Kind)
}

// AutoParallelism, as a vertex's Parallelism, leaves the choice to the
// JobManager: the slots free when the job is submitted, within the job's
// MinParallelism and MaxParallelism, the same for every such vertex (so forward
// edges keep joining equal parallelism).
const AutoParallelism = 0

// WithParallelism returns a copy of g whose AutoParallelism vertices run with
// parallelism auto (clamped to the job's bounds and each vertex's own cap).
func (g *JobGraph) WithParallelism(auto int) *JobGraph {
	if g.MaxParallelism > 0 {
		auto = min(auto, g.MaxParallelism)
	}
	auto = max(auto, g.MinParallelism, 1)
	c := *g
	c.Vertices = make([]*JobVertex, len(g.Vertices))
	for i, v := range g.Vertices {
		cv := *v
		if cv.Parallelism == AutoParallelism {
			cv.Parallelism = auto
			if cv.MaxParallelism > 0 {
				cv.Parallelism = min(cv.Parallelism, cv.MaxParallelism)
			}
		}
		c.Vertices[i] = &cv
	}
	return &c
}

// JobVertex is one node of the JobGraph: a chain of operators fused by the planner
// into one task per parallel instance. Chain[0] is a "source" for source vertices.
type JobVertex struct {
	ID          int            `json:"id"`
	Name        string         `json:"name"`
	Chain       []OperatorSpec `json:"chain"`
	Parallelism int            `json:"parallelism"`
	// MaxParallelism caps Parallelism (1 for vertices that must see every row, such
	// as a global sort); 0 means no cap.
	MaxParallelism int `json:"max_parallelism,omitempty"`
}

// IsSource reports whether the vertex starts with a source ("source", "values"
// or "snapshot").
func (v *JobVertex) IsSource() bool {
	return len(v.Chain) > 0 && (v.Chain[0].Kind == "source" || v.Chain[0].Kind == "values" || v.Chain[0].Kind == "snapshot")
}

// Out returns the schema of the vertex's output.
func (v *JobVertex) Out() types.Schema { return v.Chain[len(v.Chain)-1].Out }

// JobEdge connects the output of vertex From to input Input of vertex To.
type JobEdge struct {
	From      int       `json:"from"`
	To        int       `json:"to"`
	Input     int       `json:"input"`
	Partition Partition `json:"partition"`
	// Late says the edge carries the late rows of From's windowed operators
	// (TaskContext.Late) instead of its output: a job's late-rows table (SET
	// late_rows_table). It carries From's barriers and end of stream too.
	Late bool `json:"late,omitempty"`
}

// JobGraph is the planner's output and the JobManager's input: the vertices after
// operator fusion, and the edges between them. Vertices are in topological order
// (every edge goes from a lower index to a higher one), and Vertices[i].ID == i.
type JobGraph struct {
	Vertices []*JobVertex `json:"vertices"`
	Edges    []*JobEdge   `json:"edges"`
	// MinParallelism and MaxParallelism bound the parallelism the JobManager
	// gives vertices whose Parallelism is AutoParallelism (0: no bound).
	MinParallelism int `json:"min_parallelism,omitempty"`
	MaxParallelism int `json:"max_parallelism,omitempty"`
	// NetworkTasks says how the sending side of a network edge runs:
	// NetworkFused serialises and writes in the producing task itself;
	// NetworkOwn gives the producer a network task, which it hands batches to
	// through a queue, so encoding and socket writes overlap its work;
	// NetworkAuto (or empty, the default) chooses per edge (PlaceNetworkTasks).
	// SET network_task = 'fused' | 'own' | 'auto'.
	NetworkTasks string `json:"network_tasks,omitempty"`
	// NoTaskMetrics turns off the tasks' time accounting and per-operator
	// counts for this job (TaskContext.NoTaskMetrics; SET task_metrics = off).
	NoTaskMetrics bool `json:"no_task_metrics,omitempty"`
	// Network names the network the job's channels between TaskManagers use
	// (SET network = 'batch'): each TaskManager declares its networks with
	// --network NAME=ADDR. Empty means the default one (--data-addr).
	Network string `json:"network,omitempty"`
}

// Inputs returns the edges into vertex id.
func (g *JobGraph) Inputs(id int) []*JobEdge {
	var es []*JobEdge
	for _, e := range g.Edges {
		if e.To == id {
			es = append(es, e)
		}
	}
	return es
}

// Outputs returns the edges out of vertex id.
func (g *JobGraph) Outputs(id int) []*JobEdge {
	var es []*JobEdge
	for _, e := range g.Edges {
		if e.From == id {
			es = append(es, e)
		}
	}
	return es
}

// MustConfig encodes an operator config; it panics only on a programming error
// (a config type that cannot be encoded).
func MustConfig(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// How a network edge's sending side runs (JobGraph.NetworkTasks; see
// PlaceNetworkTasks): fused into the producing task, in a network task of its
// own, or, the default, chosen per edge by the slots there are.
const (
	NetworkFused = "fused"
	NetworkOwn   = "own"
	NetworkAuto  = "auto"
)

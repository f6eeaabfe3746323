package planner

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

type testCatalog map[string]*sql.Table

func (c testCatalog) Table(name string) (*sql.Table, bool) {
	t, ok := c[strings.ToLower(name)]
	return t, ok
}

var catalog = testCatalog{
	"docs": {Name: "docs", Engine: "file", Connection: "file:///data/kjv.txt",
		Columns: types.Schema{{Name: "line", Type: types.StringType}}},
	"emp": {Name: "emp", Engine: "file", Connection: "file:///data/emp.csv?format=csv",
		Columns: types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType},
			{Name: "dept_id", Type: types.Int64Type}, {Name: "salary", Type: types.DecimalType(10, 2)}}},
	"clicks": {Name: "clicks", Engine: "kafka", Connection: "kafka://127.0.0.1:9092/clicks?format=json",
		Columns: types.Schema{{Name: "url", Type: types.StringType}, {Name: "ms", Type: types.Int64Type}}},
	"bids": {Name: "bids", Engine: "kafka", Connection: "kafka://127.0.0.1:9092/bids?format=json",
		Columns:   types.Schema{{Name: "k", Type: types.StringType}, {Name: "price", Type: types.Int64Type}, {Name: "ts", Type: types.TimestampType}},
		Watermark: &sql.Watermark{Column: "ts", Expr: expr.Column(2, types.TimestampType, "ts")}},
	"dept": {Name: "dept", Engine: "file", Connection: "file:///data/dept.csv?format=csv",
		Columns: types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType}}},
}

// testEstimates is a sql.RowEstimator of given rows per table name.
type testEstimates map[string]float64

func (e testEstimates) EstimateRows(t *sql.Table) (float64, bool) {
	n, ok := e[t.Name]
	return n, ok
}

// TestPlanner reads testdata/*: each `explain [parallelism=N] [sink=append|upsert]`
// case plans its query on two TaskManagers of two slots each and prints the
// three graphs; `dot` prints the Graphviz form. Tables clicks and bids (with a
// watermark on ts) are streams (kafka);
// sink= writes the rows to a kafka table, upsert keyed by the first column;
// late= names the columns of a late-rows table; state_backend= is SET
// state_backend's.
func TestPlanner(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			opts := Options{Parallelism: 2, Unbounded: func(c, _ string) bool { return c == "kafka" }}
			sink := ""
			var keep []string
			for _, arg := range d.CmdArgs {
				switch arg.Key {
				case "late": // late=k,ts,late_watermark: a late-rows table of these columns, typed as bids' (SET late_rows_table)
					late := &LateRows{Table: "late", Sink: exec.ConnectorSpec{Connector: "kafka", URL: "kafka://127.0.0.1:9092/late"}}
					for _, name := range arg.Vals {
						typ := types.StringType
						if name == LateWatermarkColumn {
							typ = types.TimestampType
						}
						for _, f := range catalog["bids"].Columns {
							if f.Name == name {
								typ = f.Type
							}
						}
						late.Sink.Schema = append(late.Sink.Schema, types.Field{Name: name, Type: typ})
						keep = append(keep, name)
					}
					opts.Late = late
				case "parallelism":
					opts.Parallelism, _ = strconv.Atoi(arg.Vals[0])
				case "sink":
					sink = arg.Vals[0]
				case "state_backend":
					opts.StateBackend = arg.Vals[0]
				case "state_ttl":
					opts.StateTTL, _ = time.ParseDuration(arg.Vals[0])
				case "rows": // rows=emp:1000000,dept:10: tables' estimated rows
					est := testEstimates{}
					for _, v := range arg.Vals {
						name, n, _ := strings.Cut(v, ":")
						est[name], _ = strconv.ParseFloat(n, 64)
					}
					opts.Rows = func(p sql.Plan, upper bool) (float64, bool) { return sql.EstimateRows(p, est, upper) }
				}
			}
			stmts, err := sql.Parse(d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			st, err := sql.Bind(stmts[0], catalog, d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			q, ok := st.(*sql.Query)
			if !ok {
				return fmt.Sprintf("not a query: %T\n", st)
			}
			if sink != "" {
				opts.Sink = &exec.ConnectorSpec{Connector: "kafka", URL: "kafka://127.0.0.1:9092/out", Schema: q.Plan.Schema()}
				if sink == "upsert" {
					opts.Sink.Key, opts.Upsert = []int{0}, true
				}
			}
			sg, err := Build(sql.OptimizeKeeping(q.Plan, keep), opts)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			switch d.Cmd {
			case "explain":
				jg := Fuse(sg)
				slots := []exec.SlotRef{{TaskManager: "tm1", Index: 0}, {TaskManager: "tm1", Index: 1}, {TaskManager: "tm2", Index: 0}, {TaskManager: "tm2", Index: 1}}
				eg, err := jobmanager.BuildExecutionGraph("test", jg.WithParallelism(len(slots)), jobmanager.PlaceSlots(slots, nil))
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return Explain(sg, jg, eg, nil)
			case "dot":
				return ExplainDot(sg)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// A filter right over a scan of a stored table goes to its source as a hint,
// over the table's own column positions (the scan reads only some).
func TestStoredScanFilterHint(t *testing.T) {
	tbl := &sql.Table{Name: "r", Engine: sql.StoredEngine, Connection: "hummer://r-1",
		Columns: types.Schema{{Name: "note", Type: types.StringType}, {Name: "id", Type: types.Int64Type}}}
	scan := &sql.Scan{Table: tbl, Columns: []int{1}}
	cond := expr.Call("=", types.BoolType, expr.Column(0, types.Int64Type, "id"), expr.Literal(types.IntValue(5)))
	sg, err := Build(&sql.Filter{Input: scan, Cond: cond}, Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	var spec exec.ConnectorSpec
	if err := json.Unmarshal(sg.Nodes[0].Op.Config, &spec); err != nil {
		t.Fatal(err)
	}
	if f := spec.Filter; f == nil || f.Func != "=" || f.Args[0].Kind != expr.KindColumn || f.Args[0].Col != 1 {
		t.Errorf("the source's filter hint is %+v, want id (table column 1) = 5", spec.Filter)
	}
	// Not for a connector's table.
	file := *tbl
	file.Engine, file.Connection = "file", "file:///x.csv?format=csv"
	sg, err = Build(&sql.Filter{Input: &sql.Scan{Table: &file, Columns: []int{1}}, Cond: cond}, Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	spec = exec.ConnectorSpec{}
	json.Unmarshal(sg.Nodes[0].Op.Config, &spec)
	if spec.Filter != nil {
		t.Errorf("a file table's source got a filter hint: %v", spec.Filter)
	}
}

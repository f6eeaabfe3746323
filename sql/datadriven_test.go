package sql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// testTables is the catalog every data-driven file starts with.
const testTables = `
CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file:///data/kjv.txt';
CREATE TABLE orders (id BIGINT, customer_id INT, amount DECIMAL(10,2), status VARCHAR(20), ts DATETIME(3), PRIMARY KEY (id))
  ENGINE=csv CONNECTION='file:///data/orders.csv';
CREATE TABLE customers (id BIGINT, name TEXT, region TEXT, score DOUBLE)
  ENGINE=csv CONNECTION='file:///data/customers.csv';
CREATE TABLE events (id BIGINT, ok BOOLEAN, v DOUBLE, n INT, d DECIMAL, ts TIMESTAMP)
  ENGINE=csv CONNECTION='file:///data/events.csv';
`

// newTestCatalog returns an in-memory catalog holding testTables.
func newTestCatalog(t testing.TB) *Catalog {
	t.Helper()
	cat, err := OpenCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	if err := execDDL(cat, testTables); err != nil {
		t.Fatal(err)
	}
	return cat
}

// execDDL binds each statement of query and applies CREATE and DROP TABLE to cat.
func execDDL(cat *Catalog, query string) error {
	stmts, err := Parse(query)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		st, err := Bind(s, cat, query)
		if err != nil {
			return err
		}
		switch st := st.(type) {
		case *CreateTable:
			err = cat.Create(st.Table, st.IfNotExists)
		case *DropTable:
			err = cat.DropTables(st.Names, st.IfExists)
		case *CreateView:
			err = cat.Create(st.View, false)
		case *DropView:
			err = cat.DropTables(st.Names, st.IfExists)
		default:
			err = fmt.Errorf("not DDL: %T", st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TestDataDriven runs testdata/*. Commands:
//
//	bind      parse and bind the input; print the plan (or statement, or error)
//	optimize  the same, then Optimize the plan
//	exec      run the input's CREATE/DROP TABLE statements against the catalog
//	tables    list the catalog
//	estimate  have the catalog estimate tables' rows: lines "table rows"
//	          ("inf" for a stream), columns' distinct values: lines
//	          "table.column values", and columns' ranges: lines "table.column
//	          min max" (integers, or dates as 2006-01-02), values spread
//	          evenly between, for the join order; the rest unknown
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		cat := newTestCatalog(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "bind", "optimize":
				checkOptimize(t, cat, d.Input)
				return runBind(cat, d.Input, d.Cmd == "optimize")
			case "exec":
				if err := execDDL(cat, d.Input); err != nil {
					return formatError(d.Input, err)
				}
				return "ok\n"
			case "estimate":
				rows := map[string]float64{}   // "table", or "table.column" for distinct values
				spans := map[string][2]int64{} // "table.column": its values, evenly spread
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if f := strings.Fields(line); len(f) == 3 {
						spans[f[0]] = [2]int64{spanBound(t, f[1]), spanBound(t, f[2])}
						continue
					}
					var name string
					var n float64
					if _, err := fmt.Sscan(line, &name, &n); err != nil {
						t.Fatalf("%s: %q: %v", d.Pos, line, err)
					}
					rows[name] = n
				}
				cat.SetRangeEstimator(func(tb *Table, col int, lo, hi int64) (float64, bool) {
					sp, ok := spans[tb.Name+"."+tb.Columns[col].Name]
					if !ok {
						return 0, false
					}
					lo, hi = max(lo, sp[0]), min(hi, sp[1])
					return max(float64(hi-lo), 0) / float64(sp[1]-sp[0]), true
				})
				cat.SetRowEstimator(func(tb *Table) (float64, bool) {
					n, ok := rows[tb.Name]
					return n, ok
				})
				cat.SetDistinctEstimator(func(tb *Table, col int) (float64, bool) {
					n, ok := rows[tb.Name+"."+tb.Columns[col].Name]
					return n, ok
				})
				return "ok\n"
			case "tables":
				var sb strings.Builder
				for _, tb := range cat.Tables() {
					fmt.Fprintf(&sb, "%s %s engine=%s\n", tb.Name, schemaText(tb.Columns), tb.Engine)
				}
				return sb.String()
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// checkOptimize runs every query of the input, as bound and as optimised, on
// the fixture rows (interp_test.go): the results and schemas must agree, and
// Optimize must leave the bound plan untouched.
func checkOptimize(t *testing.T, cat CatalogReader, query string) {
	t.Helper()
	stmts, err := Parse(query)
	if err != nil {
		return
	}
	for _, s := range stmts {
		st, err := Bind(s, cat, query)
		if err != nil {
			continue
		}
		var p Plan
		switch st := st.(type) {
		case *Query:
			p = st.Plan
		case *Explain:
			p = st.Query.Plan
		default:
			continue
		}
		before := Format(p)
		o := Optimize(p)
		if Format(p) != before {
			t.Errorf("%s: Optimize modified its input", s.Text())
		}
		if schemaText(o.Schema()) != schemaText(p.Schema()) {
			t.Errorf("%s: Optimize changed the schema %s to %s", s.Text(), schemaText(p.Schema()), schemaText(o.Schema()))
		}
		want, err := run(p)
		if err != nil {
			continue // a runtime error (1/0): nothing to compare
		}
		got, err := run(o)
		if err != nil {
			t.Errorf("%s: the optimised plan fails: %v\n%s", s.Text(), err, Format(o))
			continue
		}
		if w, g := resultKey(want), resultKey(got); w != g {
			t.Errorf("%s: results differ\nbound:\n%s\noptimised:\n%s\n%s", s.Text(), w, g, Format(o))
		}
	}
}

func runBind(cat CatalogReader, query string, optimize bool) string {
	stmts, err := Parse(query)
	if err != nil {
		return formatError(query, err)
	}
	var sb strings.Builder
	for _, s := range stmts {
		st, err := Bind(s, cat, query)
		if err != nil {
			sb.WriteString(formatError(query, err))
			continue
		}
		sb.WriteString(formatStatement(st, optimize))
	}
	return sb.String()
}

// formatStatement prints a bound statement for the test files.
func formatStatement(st Statement, optimize bool) string {
	plan := func(p Plan) string {
		if optimize {
			p = Optimize(p)
		}
		return Format(p)
	}
	switch st := st.(type) {
	case *Query:
		return plan(st.Plan)
	case *Explain:
		return fmt.Sprintf("Explain format=%s analyze=%v\n%s", st.Format, st.Analyze, plan(st.Query.Plan))
	case *Insert:
		return fmt.Sprintf("Insert into %s\n%s", st.Table.Name, plan(st.Query.Plan))
	case *ShowJobs:
		return "ShowJobs\n"
	case *Kill:
		return fmt.Sprintf("Kill %s\n", st.JobID)
	case *CreateView:
		return fmt.Sprintf("CreateView %s %s query=%q\n%s", st.View.Name, schemaText(st.View.Columns), st.View.Query, plan(st.Query.Plan))
	case *DropView:
		return fmt.Sprintf("DropView %v if_exists=%v\n", st.Names, st.IfExists)
	case *CreateTable:
		tb := st.Table
		s := fmt.Sprintf("CreateTable %s %s engine=%s connection=%q", tb.Name, schemaText(tb.Columns), tb.Engine, tb.Connection)
		if len(tb.PrimaryKey) > 0 {
			s += fmt.Sprintf(" primary_key=%v", tb.PrimaryKey)
		}
		if st.IfNotExists {
			s += " if_not_exists"
		}
		return s + "\n"
	case *DropTable:
		s := fmt.Sprintf("DropTable %v", st.Names)
		if st.IfExists {
			s += " if_exists"
		}
		return s + "\n"
	case *ShowTables:
		return "ShowTables\n"
	case *Describe:
		return fmt.Sprintf("Describe %s %s\n", st.Table.Name, schemaText(st.Table.Columns))
	case *Set:
		if st.Values == nil {
			return fmt.Sprintf("Set %s = DEFAULT local=%v\n", st.Name, st.Local)
		}
		return fmt.Sprintf("Set %s = %q local=%v\n", st.Name, st.Values, st.Local)
	case *Reset:
		return fmt.Sprintf("Reset %q\n", st.Name)
	case *Discard:
		return fmt.Sprintf("Discard %s\n", st.What)
	case *Deallocate:
		return fmt.Sprintf("Deallocate %q\n", st.Name)
	case *Show:
		return fmt.Sprintf("Show %q\n", st.Name)
	}
	return fmt.Sprintf("%T\n", st)
}

// formatError prints an error with its kind and, for one-line queries, a caret
// under the position it points at.
func formatError(query string, err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return fmt.Sprintf("error (not *sql.Error): %v\n", err)
	}
	s := fmt.Sprintf("error [%v] pos=%d: %s\n", e.Kind, e.Pos, e.Msg)
	q := strings.TrimRight(query, "\n")
	if e.Pos > 0 && !strings.Contains(q, "\n") {
		s += q + "\n" + strings.Repeat(" ", len([]rune(q)[:min(e.Pos-1, len([]rune(q)))])) + "^\n"
	}
	return s
}

// spanBound parses a range bound of the estimate command: an integer, or a
// date as its midnight's microseconds (a DATE's value).
func spanBound(t *testing.T, s string) int64 {
	if d, err := time.Parse("2006-01-02", s); err == nil {
		return d.UnixMicro()
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("range bound %q: %v", s, err)
	}
	return n
}

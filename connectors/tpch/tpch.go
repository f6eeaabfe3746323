// Package tpch writes TPC-H's eight tables as CSV files, for the tests and
// benchmarks that run the TPC-H queries on Hummer, PostgreSQL and DuckDB over the
// same data. The rows come from go-tpc's dbgen (github.com/pingcap/go-tpc), a Go
// port of TPC's own generator: the same seeds, text pool and distributions.
//
// go-tpc takes whole scale factors only. For a scale factor s below 1 (0.01 makes
// about 10 MB, small enough for a unit test) Write takes the first s of each table
// of scale factor 1 and folds its foreign keys into the smaller key ranges, as
// dbgen's own formulas do at that scale: a part's four suppliers are computed by
// the partsupp formula for s*10,000 suppliers, a line item keeps which of its
// part's four suppliers it had, and customer keys fold modulo s*150,000 (a
// multiple of 3, so the customers dbgen gives no orders, the multiples of 3, still
// have none). The data is then self-consistent, though not byte for byte what TPC's
// dbgen writes at that scale; prices keep their scale-1 values.
package tpch

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/pingcap/go-tpc/tpch/dbgen"
)

// Column is one column of a TPC-H table, with its type in SQL that Hummer,
// PostgreSQL and DuckDB all read. Text columns are TEXT rather than the spec's
// CHAR(n), whose blank padding would differ between the three.
type Column struct {
	Name, Type string
}

// Table is one TPC-H table and its columns, in the order of its CSV file.
type Table struct {
	Name    string
	Columns []Column
}

const (
	money = "DECIMAL(15,2)"
	key   = "BIGINT"
)

// Tables lists the eight tables in the order Write writes them.
var Tables = []Table{
	{"region", []Column{{"r_regionkey", key}, {"r_name", "TEXT"}, {"r_comment", "TEXT"}}},
	{"nation", []Column{{"n_nationkey", key}, {"n_name", "TEXT"}, {"n_regionkey", key}, {"n_comment", "TEXT"}}},
	{"supplier", []Column{{"s_suppkey", key}, {"s_name", "TEXT"}, {"s_address", "TEXT"}, {"s_nationkey", key},
		{"s_phone", "TEXT"}, {"s_acctbal", money}, {"s_comment", "TEXT"}}},
	{"customer", []Column{{"c_custkey", key}, {"c_name", "TEXT"}, {"c_address", "TEXT"}, {"c_nationkey", key},
		{"c_phone", "TEXT"}, {"c_acctbal", money}, {"c_mktsegment", "TEXT"}, {"c_comment", "TEXT"}}},
	{"part", []Column{{"p_partkey", key}, {"p_name", "TEXT"}, {"p_mfgr", "TEXT"}, {"p_brand", "TEXT"},
		{"p_type", "TEXT"}, {"p_size", key}, {"p_container", "TEXT"}, {"p_retailprice", money}, {"p_comment", "TEXT"}}},
	{"partsupp", []Column{{"ps_partkey", key}, {"ps_suppkey", key}, {"ps_availqty", key},
		{"ps_supplycost", money}, {"ps_comment", "TEXT"}}},
	{"orders", []Column{{"o_orderkey", key}, {"o_custkey", key}, {"o_orderstatus", "TEXT"},
		{"o_totalprice", money}, {"o_orderdate", "DATE"}, {"o_orderpriority", "TEXT"}, {"o_clerk", "TEXT"},
		{"o_shippriority", key}, {"o_comment", "TEXT"}}},
	{"lineitem", []Column{{"l_orderkey", key}, {"l_partkey", key}, {"l_suppkey", key}, {"l_linenumber", key},
		{"l_quantity", money}, {"l_extendedprice", money}, {"l_discount", money}, {"l_tax", money},
		{"l_returnflag", "TEXT"}, {"l_linestatus", "TEXT"}, {"l_shipdate", "DATE"}, {"l_commitdate", "DATE"},
		{"l_receiptdate", "DATE"}, {"l_shipinstruct", "TEXT"}, {"l_shipmode", "TEXT"}, {"l_comment", "TEXT"}}},
}

// File is the name of a table's CSV file in the directory Write fills.
func File(table string) string { return table + ".csv" }

// Rows at scale factor 1, as in TPC-H's specification (clause 4.2.5).
const (
	suppliers = 10_000
	customers = 150_000
	parts     = 200_000
	orders    = 1_500_000
)

// dbgen keeps its state in package variables: one generation at a time.
var mu sync.Mutex

// Write generates the tables at scale factor sf into dir, one CSV file each with
// a header line. sf is a whole number, or below 1 with sf*10,000 a whole number
// of suppliers of at least 4 (0.01, 0.1, 0.5, ...).
func Write(dir string, sf float64) error {
	g, err := newScale(sf)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	dbgen.InitDbGen(g.whole)
	for _, gen := range generations {
		if err := g.run(dir, gen); err != nil {
			return fmt.Errorf("tpch: %s: %w", gen.names[0], err)
		}
	}
	return nil
}

// scale holds the row counts of a scale factor.
type scale struct {
	whole                            int64 // the scale factor dbgen runs at
	folded                           bool  // sf < 1: take the first rows and fold keys
	suppliers, customers, parts, ord int64
}

func newScale(sf float64) (scale, error) {
	if sf >= 1 {
		if sf != math.Trunc(sf) {
			return scale{}, fmt.Errorf("tpch: scale factor %v: above 1 it must be a whole number", sf)
		}
		n := int64(sf)
		return scale{whole: n, suppliers: suppliers * n, customers: customers * n, parts: parts * n, ord: orders * n}, nil
	}
	s := sf * suppliers
	if sf <= 0 || s != math.Trunc(s) || s < 4 {
		return scale{}, fmt.Errorf("tpch: scale factor %v: below 1 it must give a whole number of suppliers (sf*10000), at least 4", sf)
	}
	return scale{whole: 1, folded: true, suppliers: int64(s),
		customers: int64(math.Round(sf * customers)), parts: int64(math.Round(sf * parts)), ord: int64(math.Round(sf * orders))}, nil
}

// bridge is dbgen's partsupp formula: the key of supplier i (0..3) of part p
// among n suppliers.
func bridge(p, i, n int64) int64 {
	return (p+i*(n/4+(p-1)/n))%n + 1
}

// foldSupp maps supplier s of part p at scale factor 1 to the same supplier
// slot of the folded part key.
func (g scale) foldSupp(p, s, foldedPart int64) int64 {
	for i := int64(0); i < 4; i++ {
		if bridge(p, i, suppliers) == s {
			return bridge(foldedPart, i, g.suppliers)
		}
	}
	panic(fmt.Sprintf("tpch: supplier %d is not one of part %d's", s, p))
}

func (g scale) foldPart(p int64) int64 {
	if !g.folded {
		return p
	}
	return (p-1)%g.parts + 1
}

func (g scale) foldCust(c int64) int64 {
	if !g.folded {
		return c
	}
	return (c-1)%g.customers + 1
}

// errEnough stops dbgen once a folded table has its rows; DbGen does not wrap
// its loaders' errors, so loader.done says whether the error was this one.
var errEnough = errors.New("enough rows")

// loader writes the rows dbgen hands it as CSV records into one table's file.
type loader struct {
	w     *csv.Writer
	limit int64 // items (parts, orders, ...) to take; 0: all
	n     int64
	done  bool
	rows  func(item any) [][]string
}

func (l *loader) Load(item any) error {
	if l.limit > 0 && l.n == l.limit {
		l.done = true
		return errEnough
	}
	l.n++
	for _, r := range l.rows(item) {
		if err := l.w.Write(r); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) Flush() error { return nil }

// generation is one run of dbgen: one table, or two it makes together (part with
// its partsupp rows, orders with their line items) and that must come from the
// same run, since each run draws on the generator's seeds where the last left off.
type generation struct {
	gen    dbgen.Table
	tables []dbgen.Table // loaders, in the order of names
	names  []string
}

var generations = []generation{
	{dbgen.TRegion, []dbgen.Table{dbgen.TRegion}, []string{"region"}},
	{dbgen.TNation, []dbgen.Table{dbgen.TNation}, []string{"nation"}},
	{dbgen.TSupp, []dbgen.Table{dbgen.TSupp}, []string{"supplier"}},
	{dbgen.TCust, []dbgen.Table{dbgen.TCust}, []string{"customer"}},
	{dbgen.TPartPsupp, []dbgen.Table{dbgen.TPart, dbgen.TPsupp}, []string{"part", "partsupp"}},
	{dbgen.TOrderLine, []dbgen.Table{dbgen.TOrder, dbgen.TLine}, []string{"orders", "lineitem"}},
}

// run generates one generation's tables into dir.
func (g scale) run(dir string, gen generation) (err error) {
	loaders := map[dbgen.Table]dbgen.Loader{}
	var first *loader
	for i, name := range gen.names {
		f, err := os.Create(filepath.Join(dir, File(name)))
		if err != nil {
			return err
		}
		w := csv.NewWriter(f)
		defer func() {
			w.Flush()
			if werr := w.Error(); err == nil {
				err = werr
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		if err := w.Write(columnNames(name)); err != nil {
			return err
		}
		l := &loader{w: w, rows: g.rowsOf(name)}
		if i == 0 {
			first, l.limit = l, g.limit(name)
		}
		loaders[gen.tables[i]] = l
	}
	if err := dbgen.DbGen(loaders, []dbgen.Table{gen.gen}); err != nil && !first.done {
		return err
	}
	return nil
}

func columnNames(table string) []string {
	for _, t := range Tables {
		if t.Name == table {
			names := make([]string, len(t.Columns))
			for i, c := range t.Columns {
				names[i] = c.Name
			}
			return names
		}
	}
	panic("tpch: no table " + table)
}

// rowsOf gives the function that turns dbgen's item into a table's records.
func (g scale) rowsOf(table string) func(any) [][]string {
	switch table {
	case "region":
		return region
	case "nation":
		return nation
	case "supplier":
		return supplier
	case "customer":
		return customer
	case "part":
		return part
	case "partsupp":
		return g.partsupp
	case "orders":
		return g.order
	case "lineitem":
		return g.lineitems
	}
	panic("tpch: no table " + table)
}

// limit is how many of dbgen's items a folded scale takes of a table: 0, all of
// them, at a whole scale factor.
func (g scale) limit(table string) int64 {
	if !g.folded {
		return 0
	}
	switch table {
	case "supplier":
		return g.suppliers
	case "customer":
		return g.customers
	case "part":
		return g.parts
	case "orders":
		return g.ord
	}
	return 0
}

func i64[T ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

func region(item any) [][]string {
	r := item.(*dbgen.Region)
	return [][]string{{i64(r.Code), r.Text, r.Comment}}
}

func nation(item any) [][]string {
	n := item.(*dbgen.Nation)
	return [][]string{{i64(n.Code), n.Text, i64(n.Join), n.Comment}}
}

func supplier(item any) [][]string {
	s := item.(*dbgen.Supp)
	return [][]string{{i64(s.SuppKey), s.Name, s.Address, i64(s.NationCode), s.Phone, dbgen.FmtMoney(s.Acctbal), s.Comment}}
}

func customer(item any) [][]string {
	c := item.(*dbgen.Cust)
	return [][]string{{i64(c.CustKey), c.Name, c.Address, i64(c.NationCode), c.Phone, dbgen.FmtMoney(c.Acctbal), c.MktSegment, c.Comment}}
}

func part(item any) [][]string {
	p := item.(*dbgen.Part)
	return [][]string{{i64(p.PartKey), p.Name, p.Mfgr, p.Brand, p.Type, i64(p.Size), p.Container, dbgen.FmtMoney(p.RetailPrice), p.Comment}}
}

func (g scale) partsupp(item any) [][]string {
	p := item.(*dbgen.Part)
	rows := make([][]string, len(p.S))
	for i, ps := range p.S {
		supp := int64(ps.SuppKey)
		if g.folded {
			supp = bridge(int64(p.PartKey), int64(i), g.suppliers)
		}
		rows[i] = []string{i64(ps.PartKey), strconv.FormatInt(supp, 10), i64(ps.Qty), dbgen.FmtMoney(ps.SCost), ps.Comment}
	}
	return rows
}

func (g scale) order(item any) [][]string {
	o := item.(*dbgen.Order)
	return [][]string{{i64(o.OKey), strconv.FormatInt(g.foldCust(int64(o.CustKey)), 10), string(o.Status),
		dbgen.FmtMoney(o.TotalPrice), o.Date, o.OrderPriority, o.Clerk, i64(o.ShipPriority), o.Comment}}
}

func (g scale) lineitems(item any) [][]string {
	o := item.(*dbgen.Order)
	rows := make([][]string, len(o.Lines))
	for i, l := range o.Lines {
		p, s := int64(l.PartKey), int64(l.SuppKey)
		if g.folded {
			fp := g.foldPart(p)
			p, s = fp, g.foldSupp(p, s, fp)
		}
		rows[i] = []string{i64(l.OKey), strconv.FormatInt(p, 10), strconv.FormatInt(s, 10), i64(l.LCnt),
			i64(l.Quantity), dbgen.FmtMoney(l.EPrice), dbgen.FmtMoney(l.Discount), dbgen.FmtMoney(l.Tax),
			string(l.RFlag), string(l.LStatus), l.SDate, l.CDate, l.RDate, l.ShipInstruct, l.ShipMode, l.Comment}
	}
	return rows
}

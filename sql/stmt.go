package sql

import "github.com/hummer-db/hummer/exec/types"

// Statement is a bound statement, what Bind returns for one parsed statement.
type Statement interface{ statement() }

// Table is a catalog entry: a connector-backed table.
type Table struct {
	Name       string       `json:"name"`
	Columns    types.Schema `json:"columns"`
	Engine     string       `json:"engine"`     // connector name
	Connection string       `json:"connection"` // connector URL
	// Query, for a materialised view (Engine ViewEngine), is its SELECT.
	Query string `json:"query,omitempty"`
	// PrimaryKey names the PRIMARY KEY columns, if one was declared. A sink
	// with a key upserts by it; the key is not enforced on what sources read.
	// A stored table enforces it: no two rows with one key, no NULL in it.
	PrimaryKey []string `json:"primary_key,omitempty"`
	// NotNull names the columns declared NOT NULL; a stored table enforces it.
	NotNull []string `json:"not_null,omitempty"`
	// Defaults are the DEFAULT values of a stored table's columns, by column
	// name, of the columns' types: what an INSERT that omits the column writes
	// (NULL without one).
	Defaults map[string]types.Value `json:"defaults,omitempty"`
	// OID is the table's object id in the system catalog (pg_class.oid),
	// given by the catalog when the table is created and kept for its life,
	// as clients look a table up by name and then by oid.
	OID int64 `json:"oid,omitempty"`
	// Watermark, for a table declared WATERMARK FOR col AS expr, says how far
	// event time has got in what its source read: expr's largest value so far
	// (dialect_watermark.go).
	Watermark *Watermark `json:"watermark,omitempty"`

	// pgTypes, for a system table, are its columns' PostgreSQL types.
	pgTypes []string
}

// StoredEngine is the Engine of a table Hummer stores itself (connectors/table):
// CREATE TABLE without ENGINE makes one.
const StoredEngine = "hummer"

// IsStored reports whether t is a table Hummer stores, which INSERT, UPDATE,
// DELETE and TRUNCATE change in place.
func (t *Table) IsStored() bool { return t.Engine == StoredEngine }

// NotNullColumns returns the positions of the NOT NULL columns.
func (t *Table) NotNullColumns() []int {
	var cols []int
	for _, name := range t.NotNull {
		cols = append(cols, columnIndex(t.Columns, name))
	}
	return cols
}

// ViewEngine is the Engine of a catalog entry that is a materialised view: a job
// keeps the result of its Query, which reads of the view see.
const ViewEngine = "view"

// IsView reports whether t is a materialised view.
func (t *Table) IsView() bool { return t.Engine == ViewEngine }

// KeyColumns returns the positions in Columns of the PRIMARY KEY columns (nil
// without a key).
func (t *Table) KeyColumns() []int {
	var key []int
	for _, name := range t.PrimaryKey {
		key = append(key, columnIndex(t.Columns, name))
	}
	return key
}

// CreateTable is CREATE TABLE [IF NOT EXISTS] t (...) ENGINE=e CONNECTION='url',
// or, for a stored table, CREATE TABLE t (...) and CREATE TABLE t AS SELECT ...
// (Query set: its rows fill the new table, whose columns are the query's).
type CreateTable struct {
	Table       *Table
	IfNotExists bool
	Query       *Query
}

// DropTable is DROP TABLE [IF EXISTS] t, ...
type DropTable struct {
	Names    []string
	IfExists bool
}

// CreateView is CREATE [MATERIALIZED] VIEW v [(columns)] AS SELECT ...: a
// continuous job keeps the query's result, which SELECT ... FROM v reads.
// View.Columns are the query's, renamed by the column list if there is one.
type CreateView struct {
	View  *Table
	Query *Query
}

// DropView is DROP [MATERIALIZED] VIEW [IF EXISTS] v, ...
type DropView struct {
	Names    []string
	IfExists bool
}

// ShowTables is SHOW TABLES.
type ShowTables struct{}

// Describe is DESCRIBE t (also DESC t, SHOW COLUMNS FROM t).
type Describe struct{ Table *Table }

// Set is SET [SESSION | LOCAL] name {TO | =} value [, ...] (also SET TIME
// ZONE, SET NAMES). Names are lower case; the session checks them and their
// values.
type Set struct {
	Name string
	// Values are the values as PostgreSQL flattens them (a string literal's
	// text, a bare word lower-cased, a number as written); nil for DEFAULT,
	// which resets the parameter.
	Values []string
	// Local: SET LOCAL, for the current transaction only.
	Local bool
}

// Reset is RESET name, or RESET ALL (Name "").
type Reset struct{ Name string }

// Discard is DISCARD ALL, PLANS, SEQUENCES or TEMP (What).
type Discard struct{ What string }

// Deallocate is DEALLOCATE [PREPARE] name, or DEALLOCATE ALL (Name ""): it
// drops prepared statements, those of the extended protocol included.
type Deallocate struct{ Name string }

// Show is SHOW name for a session variable (SHOW parallelism).
type Show struct{ Name string }

// Query is a bound SELECT. Bind leaves the plan as bound; the caller runs
// Optimize on it before planning.
type Query struct {
	Plan Plan
	// SetConfigs are the query's set_config calls, which the session applies
	// when it runs the query, in order.
	SetConfigs []SetConfig
}

// Explain is EXPLAIN [ANALYZE] [FORMAT='text'|'dot'] <query>. With Analyze the
// query runs and the plan shows what each task did.
type Explain struct {
	Format  string // "text" or "dot"
	Analyze bool
	Query   *Query
}

func (*CreateTable) statement() {}
func (*DropTable) statement()   {}
func (*CreateView) statement()  {}
func (*DropView) statement()    {}
func (*ShowTables) statement()  {}
func (*Describe) statement()    {}
func (*Set) statement()         {}
func (*Show) statement()        {}
func (*Query) statement()       {}
func (*Explain) statement()     {}

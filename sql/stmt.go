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
	// PrimaryKey names the PRIMARY KEY columns, if one was declared. It is
	// recorded, not enforced.
	PrimaryKey []string `json:"primary_key,omitempty"`
}

// CreateTable is CREATE TABLE [IF NOT EXISTS] t (...) ENGINE=e CONNECTION='url'.
type CreateTable struct {
	Table       *Table
	IfNotExists bool
}

// DropTable is DROP TABLE [IF EXISTS] t, ...
type DropTable struct {
	Names    []string
	IfExists bool
}

// ShowTables is SHOW TABLES.
type ShowTables struct{}

// Describe is DESCRIBE t (also DESC t, SHOW COLUMNS FROM t).
type Describe struct{ Table *Table }

// Set is SET name = value (also SET SESSION name = value). Names are lower case.
type Set struct {
	Name  string
	Value types.Value
}

// Show is SHOW name for a session variable (SHOW parallelism).
type Show struct{ Name string }

// Query is a bound SELECT. Bind leaves the plan as bound; the caller runs
// Optimize on it before planning.
type Query struct{ Plan Plan }

// Explain is EXPLAIN [ANALYZE] [FORMAT='text'|'dot'] <query>. With Analyze the
// query runs and the plan shows what each task did.
type Explain struct {
	Format  string // "text" or "dot"
	Analyze bool
	Query   *Query
}

func (*CreateTable) statement() {}
func (*DropTable) statement()   {}
func (*ShowTables) statement()  {}
func (*Describe) statement()    {}
func (*Set) statement()         {}
func (*Show) statement()        {}
func (*Query) statement()       {}
func (*Explain) statement()     {}

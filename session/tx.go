package session

// Transaction blocks, as PostgreSQL clients use them (psycopg2's default
// mode, JDBC's setAutoCommit(false), pgx's BeginTx, psql -1).
//
// What a block means in Hummer, which has no multi-statement transactions
// (as RisingWave has none):
//
//   - Reads in a block run as they do outside one: each statement reads the
//     tables as committed when it starts (READ COMMITTED; every isolation
//     level BEGIN names is accepted and read so).
//   - Statements that write a table Hummer stores, change the catalog (DDL,
//     users and privileges), start or stop continuous jobs, or fill a table
//     with COPY FROM commit as they run, inside a block as outside one.
//     ROLLBACK cannot undo them: when the block (or, for ROLLBACK TO, the
//     part after the savepoint) ran any, it says so with a WARNING (01000).
//   - ROLLBACK undoes what the block did to the session itself: its SET
//     commands, and the cursors it declared.
//   - A statement that fails in a block fails the block, as in PostgreSQL:
//     every later statement fails with 25P02 until ROLLBACK, or ROLLBACK TO
//     a savepoint (which was necessarily set before the failure). COMMIT of a
//     failed block rolls it back and answers ROLLBACK.
//   - BEGIN READ ONLY (START TRANSACTION READ ONLY) refuses the statements
//     that write with 25006, as PostgreSQL does.
//   - Cursors (cursor.go) live until CLOSE or the end of their block; WITH
//     HOLD ones until CLOSE or the end of the session.
//
// The wire server learns the block's state for ReadyForQuery from
// TxStatus, and reports errors it finds itself (a bad Bind) through
// FailTransaction.

import (
	"fmt"
	"maps"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/sql"
)

// txState is where a session is with respect to a transaction block.
type txState uint8

const (
	txIdle   txState = iota // no block
	txBlock                 // in a block
	txFailed                // in a block a statement failed in
)

// txn is a session's transaction block.
type txn struct {
	state    txState
	readOnly bool
	// wrote counts the statements of the block that committed as they ran.
	wrote int
	// vars are the session's variables when the block began, which ROLLBACK
	// restores.
	vars map[string]string
	// cursors is the session's cursor count when the block began: cursors
	// numbered from it on were declared in the block.
	cursors    int
	savepoints []savepoint
}

// savepoint is what ROLLBACK TO goes back to.
type savepoint struct {
	name    string
	wrote   int
	vars    map[string]string
	cursors int
}

// TxStatus is the session's transaction status as ReadyForQuery reports it:
// 'I' outside a block, 'T' in one, 'E' in one that failed.
func (s *Session) TxStatus() byte {
	switch s.tx.state {
	case txBlock:
		return 'T'
	case txFailed:
		return 'E'
	}
	return 'I'
}

// FailTransaction marks the session's block, if there is one, as failed: a
// statement or protocol message failed in it. The wire server calls it for
// every error it reports; the session calls it for its own.
func (s *Session) FailTransaction() {
	if s.tx.state == txBlock {
		s.tx.state = txFailed
	}
}

// errAborted is the answer to a statement in a failed block.
func errAborted() error {
	return sql.Errorf(sql.ErrTransactionAborted, 0, "current transaction is aborted, commands ignored until end of transaction block")
}

// checkAborted refuses node in a failed block unless it ends the block or
// rolls back to a savepoint.
func (s *Session) checkAborted(node ast.StmtNode) error {
	if s.tx.state == txFailed && (node == nil || !sql.IsTransactionExit(node)) {
		return errAborted()
	}
	return nil
}

// transaction runs a transaction statement.
func (s *Session) transaction(stmt sql.Statement) (*Result, error) {
	tx := &s.tx
	switch st := stmt.(type) {
	case *sql.Begin:
		res := &Result{Tag: st.Tag}
		if tx.state != txIdle {
			res.Warnings = []Warning{{Kind: sql.ErrInTransaction, Message: "there is already a transaction in progress"}}
			return res, nil
		}
		s.beginBlock(st.ReadOnly)
		return res, nil
	case *sql.Commit:
		if tx.state == txIdle {
			return s.noBlock("COMMIT", st.Chain)
		}
		if tx.state == txFailed {
			return s.rollback(st.Chain), nil
		}
		readOnly := tx.readOnly
		s.closeCursors(func(c *cursor) bool { return !c.hold })
		s.tx = txn{}
		s.endLocal()
		if st.Chain {
			s.beginBlock(readOnly)
		}
		return &Result{Tag: "COMMIT"}, nil
	case *sql.Rollback:
		if tx.state == txIdle {
			return s.noBlock("ROLLBACK", st.Chain)
		}
		return s.rollback(st.Chain), nil
	case *sql.Savepoint:
		if tx.state == txIdle {
			return nil, outsideBlock("SAVEPOINT")
		}
		tx.savepoints = append(tx.savepoints, savepoint{name: st.Name, wrote: tx.wrote, vars: maps.Clone(s.vars), cursors: s.cursorCount})
		return &Result{Tag: "SAVEPOINT"}, nil
	case *sql.Release:
		if tx.state == txIdle {
			return nil, outsideBlock("RELEASE SAVEPOINT")
		}
		i, err := s.findSavepoint(st.Name)
		if err != nil {
			return nil, err
		}
		tx.savepoints = tx.savepoints[:i]
		return &Result{Tag: "RELEASE"}, nil
	case *sql.RollbackTo:
		if tx.state == txIdle {
			return nil, outsideBlock("ROLLBACK TO SAVEPOINT")
		}
		i, err := s.findSavepoint(st.Name)
		if err != nil {
			return nil, err
		}
		sp := tx.savepoints[i]
		tx.savepoints = tx.savepoints[:i+1]
		tx.state = txBlock
		s.vars = maps.Clone(sp.vars)
		s.closeCursors(func(c *cursor) bool { return c.seq >= sp.cursors })
		res := &Result{Tag: "ROLLBACK"}
		if n := tx.wrote - sp.wrote; n > 0 {
			res.Warnings = []Warning{writesCommitted(fmt.Sprintf("the writes since savepoint %q were already committed", sp.name), "ROLLBACK TO SAVEPOINT", n)}
		}
		return res, nil
	}
	return nil, fmt.Errorf("session: %T is not a transaction statement", stmt)
}

// beginBlock starts a block.
func (s *Session) beginBlock(readOnly bool) {
	s.tx = txn{state: txBlock, readOnly: readOnly, vars: maps.Clone(s.vars), cursors: s.cursorCount}
}

// rollback ends the block, undoing what it did to the session, and starts
// another with chain.
func (s *Session) rollback(chain bool) *Result {
	tx := s.tx
	s.vars = tx.vars
	s.endLocal() // their values before the block, which tx.vars holds too
	s.closeCursors(func(c *cursor) bool { return !c.hold || c.seq >= tx.cursors })
	s.tx = txn{}
	if chain {
		s.beginBlock(tx.readOnly)
	}
	res := &Result{Tag: "ROLLBACK"}
	if tx.wrote > 0 {
		res.Warnings = []Warning{writesCommitted("the writes of this transaction block were already committed", "ROLLBACK", tx.wrote)}
	}
	return res
}

// writesCommitted is the warning of a ROLLBACK [TO SAVEPOINT], verb, that
// could not undo n statements.
func writesCommitted(msg, verb string, n int) Warning {
	stmts := "statements were"
	if n == 1 {
		stmts = "statement was"
	}
	return Warning{Kind: sql.ErrWritesCommitted, Message: msg,
		Detail: fmt.Sprintf("Hummer commits each statement that writes a table or changes the catalog as it runs, in a transaction block too: %d such %s committed, and %s did not undo them.", n, stmts, verb)}
}

// noBlock answers COMMIT or ROLLBACK (verb) outside a block: a warning, or
// with AND CHAIN an error, as in PostgreSQL.
func (s *Session) noBlock(verb string, chain bool) (*Result, error) {
	if chain {
		return nil, outsideBlock(verb + " AND CHAIN")
	}
	return &Result{Tag: verb, Warnings: []Warning{{Kind: sql.ErrNoTransaction, Message: "there is no transaction in progress"}}}, nil
}

// outsideBlock is the error of a statement that only a block may run.
func outsideBlock(what string) error {
	return sql.Errorf(sql.ErrNoTransaction, 0, "%s can only be used in transaction blocks", what)
}

// findSavepoint returns the index of the latest savepoint named name.
func (s *Session) findSavepoint(name string) (int, error) {
	for i := len(s.tx.savepoints) - 1; i >= 0; i-- {
		if s.tx.savepoints[i].name == name {
			return i, nil
		}
	}
	return 0, sql.Errorf(sql.ErrUnknownSavepoint, 0, "savepoint \"%s\" does not exist", name)
}

// beforeWrite refuses stmt in a READ ONLY block if it writes, and reports
// whether it does.
func (s *Session) beforeWrite(stmt sql.Statement, text string) (bool, error) {
	if !writes(stmt) {
		return false, nil
	}
	if s.tx.state != txIdle && s.tx.readOnly {
		return true, sql.Errorf(sql.ErrReadOnlyTransaction, 0, "cannot execute %s in a read-only transaction", commandName(stmt, text))
	}
	return true, nil
}

// wroteInBlock counts a statement that wrote, committed as it ran, against
// the block if there is one.
func (s *Session) wroteInBlock() {
	if s.tx.state != txIdle {
		s.tx.wrote++
	}
}

// writes reports whether stmt writes a table, changes the catalog or starts
// or stops a job: everything but reads, SET and SHOW, and the transaction
// and cursor statements. A statement added later counts as a write until
// listed here.
func writes(stmt sql.Statement) bool {
	switch stmt.(type) {
	case *sql.Query, *sql.RecursiveQuery, *sql.Explain, *sql.Show, *sql.ShowTables, *sql.Describe,
		*sql.ShowJobs, *sql.ShowGrants, *sql.Set,
		*sql.Begin, *sql.Commit, *sql.Rollback, *sql.Savepoint, *sql.Release, *sql.RollbackTo,
		*sql.DeclareCursor, *sql.Fetch, *sql.CloseCursor:
		return false
	}
	return true
}

// commandName names a writing statement as PostgreSQL's errors do.
func commandName(stmt sql.Statement, text string) string {
	switch st := stmt.(type) {
	case *sql.Insert:
		return "INSERT"
	case *sql.Update:
		return "UPDATE"
	case *sql.Delete:
		return "DELETE"
	case *sql.Truncate:
		return "TRUNCATE TABLE"
	case *sql.CreateTable:
		if st.Query != nil {
			return "CREATE TABLE AS"
		}
		return "CREATE TABLE"
	case *sql.DropTable:
		return "DROP TABLE"
	}
	w := strings.Fields(strings.ToUpper(text))
	n := 2
	if len(w) > 2 && w[1] == "MATERIALIZED" {
		n = 3
	}
	return strings.Join(w[:min(n, len(w))], " ")
}

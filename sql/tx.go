package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Transaction blocks and cursors: the statements, and their binding. The
// dialect layer (dialect_tx.go) turns PostgreSQL's forms into ones the parser
// reads, or, for cursors, into facts; what they mean is the session's
// (session/tx.go).

// Begin is BEGIN [WORK|TRANSACTION] [modes] or START TRANSACTION [modes].
// The isolation level is accepted and not kept: every block reads as READ
// COMMITTED does (session/tx.go).
type Begin struct {
	ReadOnly bool
	Tag      string // "BEGIN" or "START TRANSACTION", as the user wrote it
}

// Commit is COMMIT or END [WORK|TRANSACTION] [AND [NO] CHAIN]; with Chain a
// new block with the same modes starts at once.
type Commit struct{ Chain bool }

// Rollback is ROLLBACK or ABORT [WORK|TRANSACTION] [AND [NO] CHAIN].
type Rollback struct{ Chain bool }

// Savepoint is SAVEPOINT name.
type Savepoint struct{ Name string }

// Release is RELEASE [SAVEPOINT] name.
type Release struct{ Name string }

// RollbackTo is ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] name.
type RollbackTo struct{ Name string }

// DeclareCursor is DECLARE name [BINARY] [ASENSITIVE|INSENSITIVE] [NO SCROLL]
// CURSOR [WITH HOLD|WITHOUT HOLD] FOR query.
type DeclareCursor struct {
	Name   string
	Binary bool // BINARY: rows in binary format (refused by the session)
	Hold   bool // WITH HOLD: the cursor outlives the block that declared it
	Scroll bool // SCROLL: may move backward and to any row (session/scroll.go)
	// Query is the cursor's query: a *Query or a *RecursiveQuery.
	Query Statement
}

// FetchAll is Fetch.Count for ALL: every remaining row.
const FetchAll = -1

// Fetch is FETCH [direction] [FROM|IN] name, or with Move, MOVE: it reads
// rows as Dir and Count say, returning them (FETCH) or only counting them
// (MOVE).
type Fetch struct {
	Name  string
	Count int64
	Move  bool
	Dir   FetchDir
}

// FetchDir is how a Fetch's Count counts.
type FetchDir uint8

const (
	// FetchForward reads Count rows (FetchAll: all that are left) forward:
	// NEXT, FORWARD [n | ALL], n, ALL.
	FetchForward FetchDir = iota
	// FetchBackward reads Count rows (FetchAll: all before) backward:
	// PRIOR, BACKWARD [n | ALL], -n.
	FetchBackward
	// FetchAbsolute reads row Count, counted from the end when negative,
	// none for 0: FIRST, LAST, ABSOLUTE n.
	FetchAbsolute
	// FetchRelative reads the row Count rows from the current one (the
	// current row for 0): RELATIVE n, FETCH 0.
	FetchRelative
)

// CloseCursor is CLOSE name, or CLOSE ALL (All set, Name empty).
type CloseCursor struct {
	Name string
	All  bool
}

func (*Begin) statement()         {}
func (*Commit) statement()        {}
func (*Rollback) statement()      {}
func (*Savepoint) statement()     {}
func (*Release) statement()       {}
func (*RollbackTo) statement()    {}
func (*DeclareCursor) statement() {}
func (*Fetch) statement()         {}
func (*CloseCursor) statement()   {}

// IsTransactionExit reports whether stmt, a parsed statement, ends a
// transaction block or rolls back to a savepoint: the only statements a block
// that failed still runs (PostgreSQL's IsTransactionExitStmt).
func IsTransactionExit(stmt ast.StmtNode) bool {
	if d, ok := stmt.(*dialectStmt); ok {
		stmt = d.StmtNode
	}
	switch stmt.(type) {
	case *ast.CommitStmt, *ast.RollbackStmt:
		return true
	}
	return false
}

// bindTransaction binds the transaction statements; ok is false for any other.
func (b *binder) bindTransaction(stmt ast.StmtNode) (st Statement, ok bool, err error) {
	switch s := stmt.(type) {
	case *ast.BeginStmt:
		if s.Mode != "" || s.CausalConsistencyOnly || s.AsOf != nil {
			return nil, true, b.errorf(ErrUnsupported, nil, "this form of START TRANSACTION is not supported")
		}
		tag := "BEGIN"
		if w := strings.Fields(b.text); len(w) > 0 && strings.EqualFold(w[0], "START") {
			tag = "START TRANSACTION"
		}
		return &Begin{ReadOnly: s.ReadOnly, Tag: tag}, true, nil
	case *ast.CommitStmt:
		chain, err := b.completion(s.CompletionType)
		return &Commit{Chain: chain}, true, err
	case *ast.RollbackStmt:
		if s.SavepointName != "" {
			return &RollbackTo{Name: s.SavepointName}, true, nil
		}
		chain, err := b.completion(s.CompletionType)
		return &Rollback{Chain: chain}, true, err
	case *ast.SavepointStmt:
		return &Savepoint{Name: s.Name}, true, nil
	case *ast.ReleaseSavepointStmt:
		return &Release{Name: s.Name}, true, nil
	case *ast.DoStmt:
		// A cursor's FETCH, MOVE or CLOSE, which the dialect layer wrote as
		// DO 0 with the statement as a fact; any other DO is not supported.
		if c, found := b.cursorFact(); found {
			if c.err != nil {
				return nil, true, c.err
			}
			return c.stmt, true, nil
		}
	}
	return nil, false, nil
}

// completion reads COMMIT's and ROLLBACK's AND [NO] CHAIN; MySQL's RELEASE
// (close the connection) is refused.
func (b *binder) completion(c ast.CompletionType) (chain bool, err error) {
	switch c {
	case ast.CompletionTypeChain:
		return true, nil
	case ast.CompletionTypeRelease:
		return false, b.errorf(ErrUnsupported, nil, "AND RELEASE is not supported")
	}
	return false, nil
}

// bindDeclare binds the query of DECLARE ... CURSOR FOR query, stmt, if the
// dialect layer found one there; ok is false otherwise.
func (b *binder) bindDeclare(stmt ast.StmtNode) (st Statement, ok bool, err error) {
	d, found := b.declareFact()
	if !found {
		return nil, false, nil
	}
	var q Statement
	switch s := stmt.(type) {
	case *ast.SelectStmt:
		if s.With != nil && s.With.IsRecursive {
			q, err = b.bindRecursive(s)
			break
		}
		var p Plan
		if p, err = b.bindQuery(s); err == nil {
			q = &Query{Plan: p}
		}
	case *ast.SetOprStmt:
		var p Plan
		if p, err = b.bindSetOpr(s); err == nil {
			q = &Query{Plan: p}
		}
	default:
		return nil, true, b.errorf(ErrSyntax, nil, "DECLARE CURSOR takes a SELECT")
	}
	if err != nil {
		return nil, true, err
	}
	decl := *d
	decl.Query = q
	return &decl, true, nil
}

package session_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/sql"
)

// txStep is one statement of a transaction script and what it must answer:
// its output as run gives it (rows, else the tag), or an error of kind err
// whose message contains msg; warn, if set, is the message of the warning of
// kind warnKind it must give; status is the session's TxStatus after it.
type txStep struct {
	query    string
	out      string
	err      error
	msg      string
	warnKind error
	warn     string
	status   byte
}

// runTxScript runs steps in order on s.
func runTxScript(t *testing.T, s *session.Session, steps []txStep) {
	t.Helper()
	for _, st := range steps {
		out, warnings, err := runWarnings(s, st.query)
		switch {
		case st.err == nil && err != nil:
			t.Errorf("%s: %v", st.query, err)
		case st.err != nil && (!errors.Is(err, st.err) || !strings.Contains(errText(err), st.msg)):
			t.Errorf("%s: error %v, want %v containing %q", st.query, err, st.err, st.msg)
		case st.err == nil && out != st.out:
			t.Errorf("%s: %q, want %q", st.query, out, st.out)
		}
		switch {
		case st.warn == "" && len(warnings) > 0:
			t.Errorf("%s: warnings %+v, want none", st.query, warnings)
		case st.warn != "" && (len(warnings) != 1 || !errors.Is(warnings[0].Kind, st.warnKind) || !strings.Contains(warnings[0].Message, st.warn)):
			t.Errorf("%s: warnings %+v, want one %v containing %q", st.query, warnings, st.warnKind, st.warn)
		}
		if got := s.TxStatus(); got != st.status {
			t.Errorf("%s: status %c, want %c", st.query, got, st.status)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// runWarnings is run, also returning the statements' warnings.
func runWarnings(s *session.Session, query string) (string, []session.Warning, error) {
	var warnings []session.Warning
	var out []string
	err := s.Exec(context.Background(), query, func(r *session.Result) error {
		warnings = append(warnings, r.Warnings...)
		rows, err := drain(r)
		out = append(out, rows...)
		return err
	})
	return strings.Join(out, "\n"), warnings, err
}

// drain returns r's rows as "a|b" lines, or its tag if it has none.
func drain(r *session.Result) ([]string, error) {
	if r.Rows == nil {
		return []string{r.Tag}, nil
	}
	var out []string
	for {
		b, err := r.Rows.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for i := 0; i < int(b.NumRows()); i++ {
			var row []string
			for j := 0; j < int(b.NumCols()); j++ {
				row = append(row, expr.FormatValue(expr.ValueOf(b.Column(j), i)))
			}
			out = append(out, strings.Join(row, "|"))
		}
		b.Release()
	}
}

// txSession is a session of a fresh engine, closed (with its cursors) before
// the engine.
func txSession(t *testing.T) *session.Session {
	s := openEngine(t)
	t.Cleanup(s.Close)
	return s
}

// TestTransactionBlocks: the block's state machine, each answer and status
// as PostgreSQL 15 gives them for the same script (run with psql against
// it), but where Hummer commits writes as they run.
func TestTransactionBlocks(t *testing.T) {
	s := txSession(t)
	noTx := "there is no transaction in progress"
	runTxScript(t, s, []txStep{
		{query: "COMMIT", out: "COMMIT", warnKind: sql.ErrNoTransaction, warn: noTx, status: 'I'},
		{query: "END", out: "COMMIT", warnKind: sql.ErrNoTransaction, warn: noTx, status: 'I'},
		{query: "ROLLBACK", out: "ROLLBACK", warnKind: sql.ErrNoTransaction, warn: noTx, status: 'I'},
		{query: "ABORT", out: "ROLLBACK", warnKind: sql.ErrNoTransaction, warn: noTx, status: 'I'},
		{query: "SAVEPOINT a", err: sql.ErrNoTransaction, msg: "SAVEPOINT can only be used in transaction blocks", status: 'I'},
		{query: "RELEASE a", err: sql.ErrNoTransaction, msg: "RELEASE SAVEPOINT can only be used in transaction blocks", status: 'I'},
		{query: "ROLLBACK TO a", err: sql.ErrNoTransaction, msg: "ROLLBACK TO SAVEPOINT can only be used in transaction blocks", status: 'I'},
		{query: "DECLARE c CURSOR FOR SELECT 1", err: sql.ErrNoTransaction, msg: "DECLARE CURSOR can only be used in transaction blocks", status: 'I'},
		{query: "COMMIT AND CHAIN", err: sql.ErrNoTransaction, msg: "COMMIT AND CHAIN can only be used in transaction blocks", status: 'I'},
		{query: "ROLLBACK AND CHAIN", err: sql.ErrNoTransaction, msg: "ROLLBACK AND CHAIN can only be used in transaction blocks", status: 'I'},

		{query: "BEGIN", out: "BEGIN", status: 'T'},
		{query: "BEGIN", out: "BEGIN", warnKind: sql.ErrInTransaction, warn: "there is already a transaction in progress", status: 'T'},
		{query: "START TRANSACTION", out: "START TRANSACTION", warnKind: sql.ErrInTransaction, warn: "there is already a transaction in progress", status: 'T'},
		{query: "SAVEPOINT s1", out: "SAVEPOINT", status: 'T'},
		{query: "SELECT 1/0", err: expr.ErrDivisionByZero, status: 'E'},
		{query: "SELECT 1", err: sql.ErrTransactionAborted, msg: "current transaction is aborted, commands ignored until end of transaction block", status: 'E'},
		{query: "SAVEPOINT s2", err: sql.ErrTransactionAborted, status: 'E'},
		{query: "RELEASE s1", err: sql.ErrTransactionAborted, status: 'E'},
		{query: "ROLLBACK TO nosuch", err: sql.ErrUnknownSavepoint, msg: `savepoint "nosuch" does not exist`, status: 'E'},
		{query: "ROLLBACK TO s1", out: "ROLLBACK", status: 'T'},
		{query: "SELECT 2", out: "2", status: 'T'},
		{query: "RELEASE SAVEPOINT s1", out: "RELEASE", status: 'T'},
		{query: "RELEASE s1", err: sql.ErrUnknownSavepoint, msg: `savepoint "s1" does not exist`, status: 'E'},
		{query: "SELECT 3", err: sql.ErrTransactionAborted, status: 'E'},
		{query: "COMMIT", out: "ROLLBACK", status: 'I'},

		// Savepoints of one name: the latest is the one named.
		{query: "BEGIN; SAVEPOINT a; SAVEPOINT a; RELEASE a; ROLLBACK TO a; RELEASE a", out: "BEGIN\nSAVEPOINT\nSAVEPOINT\nRELEASE\nROLLBACK\nRELEASE", status: 'T'},
		{query: "ROLLBACK TO a", err: sql.ErrUnknownSavepoint, status: 'E'},
		{query: "ROLLBACK", out: "ROLLBACK", status: 'I'},

		// A failed statement of a multi-statement query fails the block and
		// ends the query.
		{query: "BEGIN; SELECT 1/0; SELECT 2", err: expr.ErrDivisionByZero, status: 'E'},
		{query: "COMMIT AND CHAIN", out: "ROLLBACK", status: 'T'},
		{query: "SELECT 5", out: "5", status: 'T'},
		{query: "ROLLBACK", out: "ROLLBACK", status: 'I'},

		// ROLLBACK [TO] undoes SET.
		{query: "BEGIN; SET statement_timeout = '5s'; ROLLBACK; SHOW statement_timeout", out: "BEGIN\nSET\nROLLBACK\n'0'", status: 'I'},
		{query: "BEGIN; SET statement_timeout = '2s'; SAVEPOINT a; SET statement_timeout = '3s'; ROLLBACK TO a; SHOW statement_timeout",
			out: "BEGIN\nSET\nSAVEPOINT\nSET\nROLLBACK\n'2s'", status: 'T'},
		{query: "COMMIT; SHOW statement_timeout", out: "COMMIT\n'2s'", status: 'I'},
		{query: "SET statement_timeout = 0", out: "SET", status: 'I'},
	})
}

// TestTransactionWrites: writes commit as they run; ROLLBACK says it cannot
// undo them; READ ONLY blocks refuse them with PostgreSQL's errors.
func TestTransactionWrites(t *testing.T) {
	s := txSession(t)
	committed := "were already committed"
	runTxScript(t, s, []txStep{
		{query: "CREATE TABLE t (a BIGINT)", out: "CREATE TABLE", status: 'I'},
		{query: "BEGIN; INSERT INTO t VALUES (1)", out: "BEGIN\nINSERT 0 1", status: 'T'},
		{query: "ROLLBACK", out: "ROLLBACK", warnKind: sql.ErrWritesCommitted, warn: "the writes of this transaction block " + committed, status: 'I'},
		{query: "SELECT count(*) FROM t", out: "1", status: 'I'},
		{query: "BEGIN; SAVEPOINT a; SELECT count(*) FROM t", out: "BEGIN\nSAVEPOINT\n1", status: 'T'},
		{query: "ROLLBACK TO a", out: "ROLLBACK", status: 'T'},
		{query: "INSERT INTO t VALUES (2); CREATE TABLE u (b BIGINT)", out: "INSERT 0 1\nCREATE TABLE", status: 'T'},
		{query: "ROLLBACK TO SAVEPOINT a", out: "ROLLBACK", warnKind: sql.ErrWritesCommitted, warn: `the writes since savepoint "a" ` + committed, status: 'T'},
		{query: "SELECT 1/0", err: expr.ErrDivisionByZero, status: 'E'},
		{query: "COMMIT", out: "ROLLBACK", warnKind: sql.ErrWritesCommitted, warn: committed, status: 'I'},
		{query: "SELECT count(*) FROM t; SELECT count(*) FROM u", out: "2\n0", status: 'I'},
		{query: "BEGIN; INSERT INTO t VALUES (3); COMMIT", out: "BEGIN\nINSERT 0 1\nCOMMIT", status: 'I'},

		{query: "BEGIN READ ONLY", out: "BEGIN", status: 'T'},
		{query: "SELECT count(*) FROM t", out: "3", status: 'T'},
		{query: "SET statement_timeout = '1min'", out: "SET", status: 'T'},
		{query: "INSERT INTO t VALUES (4)", err: sql.ErrReadOnlyTransaction, msg: "cannot execute INSERT in a read-only transaction", status: 'E'},
		{query: "ROLLBACK", out: "ROLLBACK", status: 'I'},
		{query: "START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY; CREATE TABLE v (a BIGINT)", err: sql.ErrReadOnlyTransaction,
			msg: "cannot execute CREATE TABLE in a read-only transaction", status: 'E'},
		{query: "ROLLBACK; BEGIN READ ONLY; DELETE FROM t", err: sql.ErrReadOnlyTransaction, msg: "cannot execute DELETE in a read-only transaction", status: 'E'},
		{query: "ROLLBACK; BEGIN READ ONLY; COMMIT AND CHAIN", out: "ROLLBACK\nBEGIN\nCOMMIT", status: 'T'},
		{query: "DROP TABLE t", err: sql.ErrReadOnlyTransaction, msg: "cannot execute DROP TABLE in a read-only transaction", status: 'E'},
		{query: "ROLLBACK; SELECT count(*) FROM t", out: "ROLLBACK\n3", status: 'I'},
	})
}

// TestCursors: DECLARE, FETCH, MOVE and CLOSE over a bounded query, with the
// counts PostgreSQL 15 gives for the same script over generate_series(1, 5).
func TestCursors(t *testing.T) {
	s := txSession(t)
	q := "SELECT g FROM g5 ORDER BY g"
	runTxScript(t, s, []txStep{
		{query: "CREATE TABLE g5 (g BIGINT); INSERT INTO g5 VALUES (1), (2), (3), (4), (5)", out: "CREATE TABLE\nINSERT 0 5", status: 'I'},
		{query: "BEGIN; DECLARE c NO SCROLL CURSOR FOR " + q, out: "BEGIN\nDECLARE CURSOR", status: 'T'},
		{query: "FETCH 2 FROM c", out: "1\n2", status: 'T'},
		{query: "FETCH FORWARD 1 IN c", out: "3", status: 'T'},
		{query: "FETCH NEXT c", out: "4", status: 'T'},
		{query: "MOVE FORWARD 1 FROM c", out: "MOVE 1", status: 'T'},
		{query: "FETCH ALL FROM c", out: "", status: 'T'},
		{query: "FETCH c", out: "", status: 'T'},
		{query: "MOVE ALL IN c", out: "MOVE 0", status: 'T'},
		{query: "FETCH BACKWARD 1 FROM c", err: sql.ErrCursorState, msg: "cursor can only scan forward", status: 'E'},
		{query: "ROLLBACK", out: "ROLLBACK", status: 'I'},

		{query: "BEGIN; DECLARE c CURSOR FOR " + q + "; MOVE 3 c; FETCH ALL c", out: "BEGIN\nDECLARE CURSOR\nMOVE 3\n4\n5", status: 'T'},
		{query: "DECLARE c CURSOR FOR SELECT 2", err: sql.ErrDuplicateCursor, msg: `cursor "c" already exists`, status: 'E'},
		{query: "ROLLBACK; BEGIN; DECLARE c CURSOR FOR SELECT 2; CLOSE c", out: "ROLLBACK\nBEGIN\nDECLARE CURSOR\nCLOSE CURSOR", status: 'T'},
		{query: "CLOSE c", err: sql.ErrUnknownCursor, msg: `cursor "c" does not exist`, status: 'E'},
		{query: "ROLLBACK; BEGIN; DECLARE d CURSOR FOR SELECT 1; CLOSE ALL", out: "ROLLBACK\nBEGIN\nDECLARE CURSOR\nCLOSE CURSOR ALL", status: 'T'},
		{query: "FETCH d", err: sql.ErrUnknownCursor, msg: `cursor "d" does not exist`, status: 'E'},
		{query: "ROLLBACK", out: "ROLLBACK", status: 'I'},

		// COMMIT closes a cursor without HOLD; ROLLBACK TO closes those
		// declared since the savepoint.
		{query: "BEGIN; DECLARE c CURSOR FOR SELECT 1; COMMIT", out: "BEGIN\nDECLARE CURSOR\nCOMMIT", status: 'I'},
		{query: "FETCH c", err: sql.ErrUnknownCursor, status: 'I'},
		{query: "BEGIN; DECLARE early CURSOR FOR " + q + "; SAVEPOINT a; DECLARE c CURSOR FOR SELECT 1; ROLLBACK TO a; FETCH 1 FROM early",
			out: "BEGIN\nDECLARE CURSOR\nSAVEPOINT\nDECLARE CURSOR\nROLLBACK\n1", status: 'T'},
		{query: "FETCH c", err: sql.ErrUnknownCursor, status: 'E'},
		{query: "ROLLBACK", out: "ROLLBACK", status: 'I'},

		// WITH HOLD: outside a block, and past COMMIT; ROLLBACK drops one
		// declared in its block.
		{query: "DECLARE h CURSOR WITH HOLD FOR " + q, out: "DECLARE CURSOR", status: 'I'},
		{query: "FETCH 1 FROM h", out: "1", status: 'I'},
		{query: "BEGIN; FETCH 1 FROM h; COMMIT", out: "BEGIN\n2\nCOMMIT", status: 'I'},
		{query: "FETCH 5 FROM h", out: "3\n4\n5", status: 'I'},
		{query: "BEGIN; FETCH 1 FROM h; ROLLBACK", out: "BEGIN\nROLLBACK", status: 'I'},
		{query: "CLOSE h", out: "CLOSE CURSOR", status: 'I'},
		{query: "BEGIN; DECLARE h CURSOR WITH HOLD FOR SELECT 1; ROLLBACK", out: "BEGIN\nDECLARE CURSOR\nROLLBACK", status: 'I'},
		{query: "FETCH h", err: sql.ErrUnknownCursor, status: 'I'},
	})
}

// TestScrollCursors: a SCROLL cursor goes any way over a bounded query's
// rows, with the rows and counts PostgreSQL 15 gives for the same script
// over VALUES (1) to (5); a NO SCROLL one goes to rows ahead (ABSOLUTE,
// RELATIVE) and refuses to go back, as there.
func TestScrollCursors(t *testing.T) {
	s := txSession(t)
	runTxScript(t, s, []txStep{
		{query: "CREATE TABLE g5 (g BIGINT); INSERT INTO g5 VALUES (1), (2), (3), (4), (5)", out: "CREATE TABLE\nINSERT 0 5", status: 'I'},
		{query: "BEGIN; DECLARE c SCROLL CURSOR FOR SELECT g FROM g5 ORDER BY g", out: "BEGIN\nDECLARE CURSOR", status: 'T'},
		{query: "FETCH 2 FROM c", out: "1\n2", status: 'T'},
		{query: "FETCH PRIOR FROM c", out: "1", status: 'T'},
		{query: "FETCH PRIOR FROM c", out: "", status: 'T'},
		{query: "FETCH PRIOR FROM c", out: "", status: 'T'},
		{query: "FETCH LAST FROM c", out: "5", status: 'T'},
		{query: "FETCH NEXT FROM c", out: "", status: 'T'},
		{query: "FETCH BACKWARD 2 FROM c", out: "5\n4", status: 'T'},
		{query: "FETCH ABSOLUTE 2 FROM c", out: "2", status: 'T'},
		{query: "FETCH ABSOLUTE -2 FROM c", out: "4", status: 'T'},
		{query: "FETCH RELATIVE -1 FROM c", out: "3", status: 'T'},
		{query: "FETCH RELATIVE 0 FROM c", out: "3", status: 'T'},
		{query: "FETCH 0 FROM c", out: "3", status: 'T'},
		{query: "FETCH FIRST FROM c", out: "1", status: 'T'},
		{query: "FETCH FORWARD ALL FROM c", out: "2\n3\n4\n5", status: 'T'},
		{query: "FETCH BACKWARD ALL FROM c", out: "5\n4\n3\n2\n1", status: 'T'},
		{query: "MOVE ABSOLUTE 3 IN c", out: "MOVE 1", status: 'T'},
		{query: "MOVE FORWARD 10 IN c", out: "MOVE 2", status: 'T'},
		{query: "FETCH -1 FROM c", out: "5", status: 'T'},
		{query: "FETCH ABSOLUTE 9 FROM c", out: "", status: 'T'},
		{query: "FETCH PRIOR FROM c", out: "5", status: 'T'},
		{query: "CLOSE c", out: "CLOSE CURSOR", status: 'T'},
		{query: "DECLARE d NO SCROLL CURSOR FOR SELECT g FROM g5 ORDER BY g; FETCH NEXT FROM d", out: "DECLARE CURSOR\n1", status: 'T'},
		{query: "FETCH ABSOLUTE 3 FROM d", out: "3", status: 'T'},
		{query: "FETCH RELATIVE 2 FROM d", out: "5", status: 'T'},
		{query: "FETCH PRIOR FROM d", err: sql.ErrCursorState, msg: "cursor can only scan forward", status: 'E'},
		{query: "ROLLBACK", out: "ROLLBACK", status: 'I'},
	})
}

// TestPreparedInBlock: the extended protocol's statements run in the block;
// in a failed block only its end may be prepared.
func TestPreparedInBlock(t *testing.T) {
	s := txSession(t)
	ctx := context.Background()
	mustRun(t, s, "BEGIN")
	p, err := s.Prepare(ctx, "SELECT 1/0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, nil); err == nil || s.TxStatus() != 'E' {
		t.Fatalf("1/0: %v, status %c; want an error and E", err, s.TxStatus())
	}
	if _, err := s.Prepare(ctx, "SELECT 1", nil); !errors.Is(err, sql.ErrTransactionAborted) {
		t.Errorf("prepare in a failed block: %v, want 25P02", err)
	}
	rb, err := s.Prepare(ctx, "ROLLBACK", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := rb.Run(ctx, nil); err != nil || res.Tag != "ROLLBACK" || s.TxStatus() != 'I' {
		t.Errorf("ROLLBACK: %v %v, status %c", res, err, s.TxStatus())
	}
	// A statement that fails to prepare fails the block.
	mustRun(t, s, "BEGIN")
	if _, err := s.Prepare(ctx, "SELECT nosuch", nil); err == nil || s.TxStatus() != 'E' {
		t.Errorf("prepare SELECT nosuch: %v, status %c; want an error and E", err, s.TxStatus())
	}
	s.FailTransaction() // no-op on a failed block
	mustRun(t, s, "ROLLBACK")
	s.FailTransaction() // no-op outside a block
	if s.TxStatus() != 'I' {
		t.Errorf("status %c after FailTransaction outside a block", s.TxStatus())
	}
	// FETCH's columns are its cursor's.
	mustRun(t, s, "BEGIN; DECLARE c CURSOR FOR SELECT 1 AS one, 'x' AS two")
	f, err := s.Prepare(ctx, "FETCH 1 FROM c", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Schema) != 2 || f.Schema[0].Name != "one" || f.Schema[1].Name != "two" {
		t.Errorf("FETCH's schema %v", f.Schema)
	}
	rows, err := collect(t, f)
	if err != nil || len(rows) != 1 || strings.Join(rows[0], "|") != "1|'x'" {
		t.Errorf("FETCH: %v %v", rows, err)
	}
	mustRun(t, s, "COMMIT")
}

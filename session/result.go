// Package session is the paper's Client: it holds one user session's settings,
// turns each statement into catalog changes or a job (SQL -> logical plan ->
// StreamGraph -> JobGraph), submits jobs to the JobManager and hands their results
// to the caller (the wire server or the CLI) as Arrow batches.
package session

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// Result is the outcome of one statement.
type Result struct {
	// Tag is the command tag: "CREATE TABLE", "SET", ... For statements that return
	// rows it is the verb only ("SELECT"); the caller appends the row count.
	Tag string
	// Rows is nil for statements that return no rows.
	Rows Rows
	// Notices are messages for the client sent before the rows.
	Notices []string
	// Warnings are WARNINGs for the client sent before the rows (and before
	// the Notices).
	Warnings []Warning
	// DropPrepared (DEALLOCATE name) names a prepared statement of the
	// extended protocol to drop; the statement fails (26000) if there is
	// none. DropAllPrepared (DEALLOCATE ALL, DISCARD ALL) drops them all.
	DropPrepared    string
	DropAllPrepared bool
	// Origins, for a query, are the table columns its columns read as they
	// are (sql.ColumnOrigins), for the RowDescription.
	Origins []sql.ColumnOrigin
}

// Warning is a WARNING for the client.
type Warning struct {
	// Kind is the sql package's sentinel that gives the warning's SQLSTATE
	// (wire/sqlstate.go); nil is 01000, warning.
	Kind    error
	Message string
	Detail  string // "" for none
}

// RowEncoder encodes a batch's rows for a client, appending them to dst. It is
// called from the goroutines that produce the batches, several at once.
type RowEncoder func(dst []byte, b arrow.RecordBatch) ([]byte, error)

// EncodingRows is implemented by Rows whose producers can encode their own
// batches: the result tasks of a query, one per subtask, then encode in parallel
// rather than leave every row to the one goroutine that writes to the client.
type EncodingRows interface {
	Rows
	// EncodeWith has the batches encoded by enc where they are sent from now on,
	// and reports whether they will be: only when several tasks send them (one
	// is better left to produce while its reader encodes). When it reports true,
	// use NextEncoded instead of Next from then on.
	EncodeWith(enc RowEncoder) bool
	// NextEncoded returns the encoding of the next batch and its number of rows
	// (encoding it itself if it was sent before EncodeWith), or io.EOF after the
	// last one, or the error that failed the job. The caller may keep data until
	// its next call or Close.
	NextEncoded(ctx context.Context) (data []byte, rows int64, err error)
}

// Rows streams a statement's result.
type Rows interface {
	Schema() types.Schema
	// Next returns the next batch, which the caller must Release, or io.EOF after
	// the last one, or the error that failed the job.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Close stops the job producing the rows if it is still running. It is safe to
	// call twice and after Next returned io.EOF or an error.
	Close()
}

// LateNotices returns what rows has to tell the client once its last row was
// read, before the statement completes: a file source that skipped bad rows
// (bad_rows=skip) says how many, and the first.
func LateNotices(rows Rows) []string {
	if n, ok := rows.(interface{ lateNotices() []string }); ok {
		return n.lateNotices()
	}
	return nil
}

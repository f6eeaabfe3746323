// Package session is the paper's Client: it holds one user session's settings,
// turns each statement into catalog changes or a job (SQL -> logical plan ->
// StreamGraph -> JobGraph), submits jobs to the JobManager and hands their results
// to the caller (the wire server or the CLI) as Arrow batches.
package session

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/types"
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

package session

import (
	"strings"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/planner"
	"github.com/hummer-db/hummer/sql"
)

// lateRows checks the late-rows table a job is to send its late rows to
// (SET late_rows_table = name), when it starts: a table of this session's
// catalog that its user may insert into and that a sink can write, other
// than the job's own sink. Its columns are checked against each windowed
// operator's rows when the job is planned; a job without one does not use
// the table, so is not refused for it (planner.LateRows).
func (s *Session) lateRows(name string, sink ...*exec.ConnectorSpec) *planner.LateRows {
	spec, err := s.lateTable(name, sink...)
	return &planner.LateRows{Table: name, Sink: spec, Err: err}
}

func (s *Session) lateTable(name string, sink ...*exec.ConnectorSpec) (exec.ConnectorSpec, error) {
	t, ok := s.e.catalog.Table(name)
	if !ok {
		t, ok = s.e.catalog.Table(strings.ToLower(name))
	}
	if !ok {
		return exec.ConnectorSpec{}, sql.Errorf(sql.ErrUnknownTable, 0,
			"late_rows_table \"%s\" does not exist: create it (CREATE TABLE %s (...) with columns of the late rows, late_watermark and late_operator), or RESET late_rows_table", name, name)
	}
	if t.IsView() || t.IsSystem() {
		return exec.ConnectorSpec{}, sql.Errorf(sql.ErrWrongObjectType, 0, "late_rows_table \"%s\" is not a table that rows can be written to", t.Name)
	}
	if reg := s.e.cfg.Registry; reg != nil && !reg.HasSink(t.Engine) {
		return exec.ConnectorSpec{}, sql.Errorf(sql.ErrWrongObjectType, 0, "late_rows_table \"%s\" cannot be written to: ENGINE=%s has no sink", t.Name, t.Engine)
	}
	if t.IsStored() && s.e.cfg.JobManager != nil && (s.checkpointInterval() <= 0 || s.e.cfg.CheckpointURL == "") {
		// On a cluster the table's sink stages the rows in its checkpoints,
		// which this process commits (connectors/table/sink.go); a job
		// without checkpoints (a one-off query) fails as it starts.
		return exec.ConnectorSpec{}, sql.Errorf(sql.ErrUnsupported, 0, "late_rows_table \"%s\" is a table Hummer stores, which a job on a cluster of TaskManager processes writes only at checkpoints: turn them on (SET checkpoint_interval = '1s'), or use a connector's table (Kafka, say)", t.Name)
	}
	spec, err := jobSinkSpec(t)
	if err != nil {
		return exec.ConnectorSpec{}, err
	}
	if len(sink) > 0 && sink[0] != nil && sameTable(*sink[0], spec) {
		return exec.ConnectorSpec{}, sql.Errorf(sql.ErrUnsupported, 0, "late_rows_table \"%s\" is the table the job writes its rows into: send the late rows to another table", t.Name)
	}
	if u, ok := s.e.catalog.User(s.user); s.user != "" && (!ok || !u.Superuser && !u.Can(sql.PrivInsert, t.Name)) {
		return exec.ConnectorSpec{}, sql.Errorf(sql.ErrInsufficientPrivilege, 0, "permission denied for table %s (late_rows_table)", t.Name)
	}
	return spec, nil
}

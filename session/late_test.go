package session_test

import (
	"testing"
)

// TestLateRowsTablePrivilege: a user's job sends late rows only to a table
// the user may insert into (42501 otherwise), as its INSERT would.
func TestLateRowsTablePrivilege(t *testing.T) {
	e := openAuthEngine(t)
	if _, err := e.BootstrapSuperuser("root pw"); err != nil {
		t.Fatal(err)
	}
	root := e.NewUserSession("hummer")
	mustRun(t, root, "CREATE USER ann")
	mustRun(t, root, "CREATE TABLE clicks (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)")
	mustRun(t, root, "CREATE TABLE late_clicks (k TEXT, ts TIMESTAMP)")
	mustRun(t, root, "GRANT SELECT ON clicks TO ann")
	ann := e.NewUserSession("ann")
	mustRun(t, ann, "SET late_rows_table = 'late_clicks'")
	window := "SELECT k, count(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end"
	wantDenied(t, ann, window)
	mustRun(t, ann, "SELECT count(*) FROM clicks") // no window: the table is not used
	mustRun(t, root, "GRANT INSERT ON late_clicks TO ann")
	mustRun(t, ann, window)
}

package session_test

import (
	"strings"
	"testing"
)

// TestStateBackendTopN: under SET state_backend = 'disk' the plans of a
// streaming Top-N and of first-row deduplication at the watermark say their
// state is on disk.
func TestStateBackendTopN(t *testing.T) {
	s := openServeEngine(t)
	mustRun(t, s, "CREATE TABLE s1 (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) ENGINE=socket CONNECTION='socket://127.0.0.1:9?format=csv'")
	mustRun(t, s, "SET state_backend = 'disk'")
	top := "SELECT * FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM s1) t WHERE rn <= 2"
	if out := mustRun(t, s, "EXPLAIN "+top); !strings.Contains(out, "topn partition=[k] order=v desc rows 1 to 2 state_backend=disk") {
		t.Errorf("EXPLAIN of a Top-N with state_backend = 'disk':\n%s", out)
	}
	first := "SELECT k, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM s1) t WHERE rn = 1"
	if out := mustRun(t, s, "EXPLAIN "+first); !strings.Contains(out, "(first rows, at the watermark) state_backend=disk") {
		t.Errorf("EXPLAIN of first rows with state_backend = 'disk':\n%s", out)
	}
	mustRun(t, s, "SET state_backend = 'memory'")
	if out := mustRun(t, s, "EXPLAIN "+first); !strings.Contains(out, "(first rows, at the watermark)") {
		t.Errorf("EXPLAIN of first rows with state_backend = 'memory':\n%s", out)
	}
}

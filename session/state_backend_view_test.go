package session_test

import (
	"slices"
	"strings"
	"testing"
)

// TestStateBackendView: a view of 100 000 Nexmark bids (each its own row)
// and one of a GROUP BY over them, created under SET state_backend = 'disk'
// on TaskManagers whose --state-memory is the smallest a slot gets (1 MiB,
// a 256 KiB cache the bids outgrow many times), answer the rows the same
// queries give without a view.
func TestStateBackendView(t *testing.T) {
	s := openStateEngine(t)
	mustRun(t, s, `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT)
		ENGINE=nexmark CONNECTION='nexmark://bid?events=100000&rate=0&event_rate=2000'`)
	sorted := func(out string) []string {
		rows := strings.Split(out, "\n")
		slices.Sort(rows)
		return rows
	}
	for i, q := range []string{
		"SELECT auction, bidder, price, channel, dateTime FROM bid",
		"SELECT bidder % 1000 AS b, count(*) AS n, max(price) AS p FROM bid GROUP BY bidder % 1000",
	} {
		want := sorted(mustRun(t, s, q))
		if i == 0 && len(want) < 50000 {
			t.Fatalf("%d bids, too few to outgrow the cache", len(want))
		}
		mustRun(t, s, "SET state_backend = 'disk'")
		mustRun(t, s, "CREATE VIEW v AS "+q)
		got := sorted(mustRun(t, s, "SELECT * FROM v"))
		mustRun(t, s, "DROP VIEW v")
		mustRun(t, s, "SET state_backend = 'memory'")
		if !slices.Equal(got, want) {
			t.Errorf("query %d: the view on disk has %d rows, the query %d; they differ", i, len(got), len(want))
		}
	}
}

package sql

func init() {
	dialectCases = append(dialectCases, []struct{ rewrite, in, out string }{
		{"window functions", "SELECT TUMBLE_START(ts, INTERVAL '10' SECOND), count(*) FROM bid GROUP BY auction, TUMBLE(ts, INTERVAL 10 SECOND)",
			"SELECT tumble_start(ts, 10000000), count(*) FROM bid GROUP BY auction, tumble_start(ts, 10000000), tumble_end(ts, 10000000)"},
		{"window functions", "SELECT tumble_end(date_time, '2 minutes') FROM t", "SELECT tumble_end(date_time, 120000000) FROM t"},
		{"window functions", "SELECT window_start, count(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '1' HOUR)) GROUP BY 1",
			"SELECT window_start, count(*) FROM (SELECT *, tumble_start(date_time, 3600000000) AS window_start, tumble_end(date_time, 3600000000) AS window_end FROM bid) AS bid GROUP BY 1"},
		{"window functions", "SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND)) AS w WHERE w.k > 1",
			"SELECT * FROM (SELECT *, tumble_start(ts, 5000000) AS window_start, tumble_end(ts, 5000000) AS window_end FROM bid) AS w WHERE w.k > 1"},
		// Not a window's size: left to the parser, which reports it.
		{"window functions", "SELECT tumble_start(ts, INTERVAL '-1' SECOND) FROM t", "SELECT tumble_start(ts, INTERVAL '-1' SECOND) FROM t"},
		{"window functions", "SELECT tumble(a) FROM t", "SELECT tumble(a) FROM t"},
	}...)
}

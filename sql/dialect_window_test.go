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
		{"window functions", "SELECT * FROM TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) h",
			"SELECT * FROM (SELECT *, window_start + INTERVAL 10000000 MICROSECOND AS window_end FROM (SELECT *, generate_series(hop_first(ts, 2000000, 10000000), tumble_start(ts, 2000000), 2000000) AS window_start FROM bid) AS bid) h"},
		{"window functions", "SELECT * FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR))",
			"SELECT * FROM (SELECT *, generate_series(cumulate_first_end(ts, 60000000, 3600000000), tumble_end(ts, 3600000000), 60000000) AS window_end FROM (SELECT *, tumble_start(ts, 3600000000) AS window_start FROM bid) AS bid) AS bid"},
		{"window functions", "SELECT bidder, window_start, count(*) FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY bidder, window_start, window_end",
			"SELECT bidder, window_start, count(*) FROM (SELECT *, session_start(ts, 10000000) AS window_start, session_end(ts, 10000000) AS window_end FROM bid) AS bid GROUP BY bidder, window_start, window_end"},
		{"window functions", "SELECT window_end, count(*) FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) s GROUP BY window_start, window_end",
			"SELECT window_end, count(*) FROM (SELECT *, session_start(ts, 60000000) AS window_start, session_end(ts, 60000000) AS window_end FROM bid) s GROUP BY window_start, window_end"},
		// Not a partition clause after the table: left alone (the parser reports it).
		{"window functions", "SELECT * FROM TABLE(SESSION(TABLE bid ORDER BY k, DESCRIPTOR(ts), INTERVAL '1' MINUTE))",
			"SELECT * FROM TABLE(SESSION(TABLE bid ORDER BY k, DESCRIPTOR(ts), INTERVAL '1' MINUTE))"},
		{"window functions", "SELECT bidder, SESSION_START(ts, INTERVAL '10' SECOND), count(*) FROM bid GROUP BY bidder, SESSION(ts, INTERVAL '10' SECOND)",
			"SELECT bidder, session_start(ts, 10000000), count(*) FROM bid GROUP BY bidder, session_start(ts, 10000000), session_end(ts, 10000000)"},
		{"window functions", "SELECT HOP_START(B.ts, INTERVAL '2' SECOND, INTERVAL '10' SECOND), count(*) FROM bid B GROUP BY B.auction, HOP(B.ts, INTERVAL '2' SECOND, INTERVAL '10' SECOND)",
			"SELECT window_start, count(*) FROM (SELECT *, window_start + INTERVAL 10000000 MICROSECOND AS window_end FROM (SELECT *, generate_series(hop_first(ts, 2000000, 10000000), tumble_start(ts, 2000000), 2000000) AS window_start FROM bid) AS bid) B GROUP BY B.auction, window_start, window_end"},
		// A HOP group window over a join is left alone (the parser reports it).
		{"window functions", "SELECT count(*) FROM a JOIN b ON a.k = b.k GROUP BY HOP(a.ts, INTERVAL '2' SECOND, INTERVAL '10' SECOND)",
			"SELECT count(*) FROM a JOIN b ON a.k = b.k GROUP BY HOP(a.ts, INTERVAL '2' SECOND, INTERVAL '10' SECOND)"},
		// Not a window's size: left to the parser, which reports it.
		{"window functions", "SELECT tumble_start(ts, INTERVAL '-1' SECOND) FROM t", "SELECT tumble_start(ts, INTERVAL '-1' SECOND) FROM t"},
		{"window functions", "SELECT tumble(a) FROM t", "SELECT tumble(a) FROM t"},
	}...)
}

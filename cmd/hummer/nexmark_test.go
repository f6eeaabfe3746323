package main

import (
	"context"
	"crypto/md5"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The Nexmark queries of bench/nexmark, run as published over bounded
// Nexmark tables (200,000 events, 100 s of event time), give the rows
// PostgreSQL 15 gives for the same queries written for it (nexmarkPG) over
// the same events. The expected answers are PostgreSQL's: the number of rows
// and the MD5 of their text, sorted, in testdata/nexmark/QUERY.pg. With
// HUMMER_NEXMARK_PG set to a PostgreSQL connection string, the test loads
// the events there, asks PostgreSQL, and writes those files again.

// nexmarkPG are the queries in PostgreSQL's SQL: windows by epoch
// arithmetic (a hop's five windows by generate_series, tumbling ones by
// date_bin), sessions by a running sum of the gaps that start one; an AVG of
// bigints to Hummer's 16 decimals (PostgreSQL's numeric picks a scale by
// the value); SPLIT_INDEX's field i as element i+1 of string_to_array (NULL
// past the end, as Flink's).
var nexmarkPG = map[string]string{
	"q0": "SELECT auction, bidder, price, datetime, extra FROM bid",
	"q1": "SELECT auction, bidder, 0.908 * price AS price, datetime, extra FROM bid",
	"q2": "SELECT auction, price FROM bid WHERE mod(auction, 123) = 0",
	"q3": `SELECT p.name, p.city, p.state, a.id FROM auction a JOIN person p ON a.seller = p.id
	WHERE a.category = 10 AND (p.state = 'OR' OR p.state = 'ID' OR p.state = 'CA')`,
	"q4": `SELECT category, round(sum(final)::numeric(38, 20) / count(*), 16) FROM (
		SELECT max(b.price) AS final, a.category FROM auction a, bid b
		WHERE a.id = b.auction AND b.datetime BETWEEN a.datetime AND a.expires GROUP BY a.id, a.category) q
	GROUP BY category`,
	"q20": `SELECT auction, bidder, price, channel, url, b.datetime, b.extra,
	itemname, description, initialbid, reserve, a.datetime, expires, seller, category, a.extra
	FROM bid b JOIN auction a ON b.auction = a.id WHERE a.category = 10`,
	"q5": `WITH hop AS (
		SELECT b.auction, timestamp '1970-01-01' + k * interval '2 second' AS starttime
		FROM bid b, generate_series(floor(extract(epoch FROM b.datetime) / 2)::bigint - 4, floor(extract(epoch FROM b.datetime) / 2)::bigint) AS k),
	counts AS (SELECT auction, count(*) AS num, starttime FROM hop GROUP BY auction, starttime)
	SELECT c.auction, c.num FROM counts c JOIN (SELECT max(num) AS maxn, starttime FROM counts GROUP BY starttime) m
	ON c.starttime = m.starttime AND c.num >= m.maxn`,
	"q7": `SELECT B.auction, B.bidder, B.price, B.datetime, B.extra FROM bid B
	JOIN (SELECT max(price) AS maxprice, date_bin('10 seconds', datetime, timestamp '1970-01-01') + interval '10 second' AS datetime FROM bid GROUP BY 2) B1
	ON B.price = B1.maxprice WHERE B.datetime BETWEEN B1.datetime - interval '10 second' AND B1.datetime`,
	"q13": `SELECT B.auction, B.bidder, B.price, B.datetime, S.value FROM bid B JOIN side_input S ON mod(B.auction, 10000) = S.key`,
	// q10's rows, which TestNexmarkQ10 finds in the files its sink wrote.
	"q10": "SELECT auction, bidder, price, datetime, extra, to_char(datetime, 'YYYY-MM-DD'), to_char(datetime, 'HH24:MI') FROM bid",
	"q8": `SELECT P.id, P.name, P.starttime
	FROM (SELECT id, name, date_bin('10 seconds', datetime, timestamp '1970-01-01') AS starttime FROM person GROUP BY 1, 2, 3) P
	JOIN (SELECT seller, date_bin('10 seconds', datetime, timestamp '1970-01-01') AS starttime FROM auction GROUP BY 1, 2) A
	ON P.id = A.seller AND P.starttime = A.starttime`,
	"q14": `SELECT auction, bidder, 0.908 * price AS price,
	CASE WHEN extract(hour FROM datetime) >= 8 AND extract(hour FROM datetime) <= 18 THEN 'dayTime'
	     WHEN extract(hour FROM datetime) <= 6 OR extract(hour FROM datetime) >= 20 THEN 'nightTime' ELSE 'otherTime' END AS bidtimetype,
	datetime, extra, length(extra) - length(replace(extra, 'c', '')) AS c_counts
	FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000`,
	"q21": `SELECT auction, bidder, price, channel,
	CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1' WHEN lower(channel) = 'facebook' THEN '2'
	     WHEN lower(channel) = 'baidu' THEN '3' ELSE substring(url FROM '(?:&|^)channel_id=([^&]*)') END AS channel_id
	FROM bid WHERE substring(url FROM '(?:&|^)channel_id=([^&]*)') IS NOT NULL OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')`,
	"q22": `SELECT auction, bidder, price, channel, (string_to_array(url, '/'))[4], (string_to_array(url, '/'))[5], (string_to_array(url, '/'))[6] FROM bid`,
	"q15": `SELECT to_char(datetime, 'YYYY-MM-DD') AS day, count(*),
	count(*) FILTER (WHERE price < 10000), count(*) FILTER (WHERE price >= 10000 AND price < 1000000), count(*) FILTER (WHERE price >= 1000000),
	count(DISTINCT bidder), count(DISTINCT bidder) FILTER (WHERE price < 10000),
	count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000), count(DISTINCT bidder) FILTER (WHERE price >= 1000000),
	count(DISTINCT auction), count(DISTINCT auction) FILTER (WHERE price < 10000),
	count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000), count(DISTINCT auction) FILTER (WHERE price >= 1000000)
	FROM bid GROUP BY 1`,
	"q16": `SELECT channel, to_char(datetime, 'YYYY-MM-DD') AS day, max(to_char(datetime, 'HH24:MI')), count(*),
	count(*) FILTER (WHERE price < 10000), count(*) FILTER (WHERE price >= 10000 AND price < 1000000), count(*) FILTER (WHERE price >= 1000000),
	count(DISTINCT bidder), count(DISTINCT bidder) FILTER (WHERE price < 10000),
	count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000), count(DISTINCT bidder) FILTER (WHERE price >= 1000000),
	count(DISTINCT auction), count(DISTINCT auction) FILTER (WHERE price < 10000),
	count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000), count(DISTINCT auction) FILTER (WHERE price >= 1000000)
	FROM bid GROUP BY channel, 2`,
	"q17": `SELECT auction, to_char(datetime, 'YYYY-MM-DD') AS day, count(*),
	count(*) FILTER (WHERE price < 10000), count(*) FILTER (WHERE price >= 10000 AND price < 1000000), count(*) FILTER (WHERE price >= 1000000),
	min(price), max(price), round(sum(price)::numeric(38, 20) / count(*), 16), sum(price)
	FROM bid GROUP BY auction, 2`,
	"q9": `SELECT id, itemname, description, initialbid, reserve, datetime, expires, seller, category, extra,
	auction, bidder, price, bid_datetime, bid_extra
	FROM (SELECT A.*, B.auction, B.bidder, B.price, B.datetime AS bid_datetime, B.extra AS bid_extra,
	        ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.datetime ASC) AS rownum
	      FROM auction A, bid B
	      WHERE A.id = B.auction AND B.datetime BETWEEN A.datetime AND A.expires) t
	WHERE rownum <= 1`,
	"q18": `SELECT auction, bidder, price, channel, url, datetime, extra
	FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY datetime DESC) AS rank_number FROM bid) t
	WHERE rank_number <= 1`,
	"q19": `SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid) t
	WHERE rank_number <= 10`,
	"q6": `SELECT seller, round(sum(price) OVER w::numeric(38, 20) / count(*) OVER w, 16) FROM (
	SELECT * FROM (SELECT a.id, a.seller, b.price, b.datetime, ROW_NUMBER() OVER (PARTITION BY a.id, a.seller ORDER BY b.price DESC) AS rownum
	  FROM auction a JOIN bid b ON a.id = b.auction WHERE b.datetime BETWEEN a.datetime AND a.expires) r WHERE rownum <= 1) q
	WINDOW w AS (PARTITION BY seller ORDER BY datetime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)`,
	"q11": `SELECT bidder, count(*) AS bid_count, min(datetime) AS starttime, max(datetime) + interval '10 second' AS endtime
	FROM (SELECT bidder, datetime, sum(brk) OVER (PARTITION BY bidder ORDER BY datetime ROWS UNBOUNDED PRECEDING) AS sid
	      FROM (SELECT bidder, datetime, CASE WHEN datetime - lag(datetime) OVER (PARTITION BY bidder ORDER BY datetime) < interval '10 second' THEN 0 ELSE 1 END AS brk FROM bid) x) y
	GROUP BY bidder, sid`,
}

// nexmarkTies are, for a query whose answer depends on how ROW_NUMBER()
// orders rows with equal ORDER BY keys (arbitrary in both PostgreSQL and
// Hummer), the columns the comparison keeps: those the ties cannot change.
// q18's last bid of a bidder on an auction: which of the bids at the last
// instant, not the instant; q19's ten best bids of an auction: which bids
// at a price, not the prices and their row numbers. q9's winning bid of an
// auction, by price and then time, is compared whole: over these events no
// auction has two bids at its best price and time (PostgreSQL finds one
// such pair, below its auction's best price).
var nexmarkTies = map[string]string{
	// q6's winning bid of an auction is one of those at its best price
	// (two bids tie on one auction), and its average of a seller's last
	// eleven is over an order by time that ties (172 times over these
	// events): the comparison keeps the rows each seller gets.
	"q6":  "seller",
	"q18": "auction, bidder, datetime",
	"q19": "auction, price, rank_number",
}

// tieFree returns query q's sel as the comparison reads it (nexmarkTies).
func tieFree(q, sel string) string {
	if cols, ok := nexmarkTies[q]; ok {
		return "SELECT " + cols + " FROM (" + sel + ") AS tie_free"
	}
	return sel
}

func TestNexmarkVsPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := nexmarkConn(t, ctx)
	defer conn.Close(context.Background())
	var pg *pgx.Conn
	if dsn := os.Getenv("HUMMER_NEXMARK_PG"); dsn != "" {
		var err error
		if pg, err = pgx.Connect(ctx, dsn); err != nil {
			t.Fatal(err)
		}
		defer pg.Close(context.Background())
		loadNexmark(t, ctx, conn, pg)
	}
	queries := slices.Sorted(func(yield func(string) bool) {
		for q := range nexmarkPG {
			if !yield(q) {
				return
			}
		}
	})
	// Other forms of a query, which must give its answer: q11's session
	// window as the SESSION table function.
	forms := map[string]string{
		"q11-tvf": `SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
			FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
			GROUP BY bidder, window_start, window_end`,
	}
	for form, sel := range forms {
		t.Run(form, func(t *testing.T) {
			q, _, _ := strings.Cut(form, "-")
			want, err := os.ReadFile(filepath.Join("testdata/nexmark", q+".pg"))
			if err != nil {
				t.Fatal(err)
			}
			if d := digest(sortedRows(t, ctx, conn, sel)); d != string(want) {
				t.Errorf("Hummer's rows: %s\nPostgreSQL's: %s", strings.TrimSpace(d), strings.TrimSpace(string(want)))
			}
		})
	}
	// q18 and q19 as views over a copy of bid that Hummer stores: a view
	// follows its tables' changes, so they run continuously, through the
	// topn operator, and their first answer must be the batch one.
	t.Run("topn-views", func(t *testing.T) {
		if _, err := conn.Exec(ctx, "CREATE TABLE bid_stored AS SELECT * FROM bid"); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"q18", "q19"} {
			sel := strings.Replace(nexmarkSelect(t, q), "FROM bid", "FROM bid_stored", 1)
			if _, err := conn.Exec(ctx, "CREATE VIEW "+q+"_view AS "+sel); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata/nexmark", q+".pg"))
			if err != nil {
				t.Fatal(err)
			}
			if d := digest(sortedRows(t, ctx, conn, tieFree(q, "SELECT * FROM "+q+"_view"))); d != string(want) {
				t.Errorf("%s as a view: Hummer's rows: %s\nPostgreSQL's: %s", q, strings.TrimSpace(d), strings.TrimSpace(string(want)))
			}
			// Its job would go on checkpointing every bid while the other
			// queries run.
			if _, err := conn.Exec(ctx, "DROP VIEW "+q+"_view"); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, q := range queries {
		t.Run(q, func(t *testing.T) {
			got := sortedRows(t, ctx, conn, tieFree(q, nexmarkSelect(t, q)))
			golden := filepath.Join("testdata/nexmark", q+".pg")
			if pg != nil {
				want := sortedRows(t, ctx, pg, tieFree(q, nexmarkPG[q]))
				if err := os.WriteFile(golden, []byte(digest(want)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (set HUMMER_NEXMARK_PG to make it with PostgreSQL)", err)
			}
			if d := digest(got); d != string(want) {
				t.Errorf("Hummer's rows: %s\nPostgreSQL's: %s\nthe first of Hummer's: %q", strings.TrimSpace(d), strings.TrimSpace(string(want)), got[:min(3, len(got))])
			}
		})
	}
}

// TestNexmarkJoinViews runs the join queries of bench/nexmark as views
// over tables Hummer stores, holding the same events: their scans follow
// the tables' changes, so the joins are stream joins keeping both sides
// (and q4 aggregates over one's changes). A view's rows, once it has caught
// up, are PostgreSQL's answer (testdata/nexmark/QUERY.pg).
func TestNexmarkJoinViews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	storeNexmark(t, ctx, conn, "INSERT INTO bid SELECT * FROM gen_bid")
	for _, q := range []string{"q3", "q4", "q20"} {
		t.Run(q, func(t *testing.T) {
			cols := "" // q20's names two columns dateTime, and a view's must differ
			if q == "q20" {
				cols = "(auction, bidder, price, channel, url, bid_dateTime, bid_extra, itemName, description, initialBid, reserve, auction_dateTime, expires, seller, category, auction_extra) "
			}
			if _, err := conn.Exec(ctx, "CREATE VIEW v_"+q+" "+cols+"AS "+nexmarkSelect(t, q)); err != nil {
				t.Fatal(err)
			}
			defer conn.Exec(context.Background(), "DROP VIEW v_"+q)
			want, err := os.ReadFile(filepath.Join("testdata/nexmark", q+".pg"))
			if err != nil {
				t.Fatal(err)
			}
			if d := digest(sortedRows(t, ctx, conn, "SELECT * FROM v_"+q)); d != string(want) {
				t.Errorf("the view's rows: %s\nPostgreSQL's: %s", strings.TrimSpace(d), strings.TrimSpace(string(want)))
			}
		})
	}
}

// storeNexmark declares the Nexmark tables of nexmarkDDL as gen_person,
// gen_auction and gen_bid, and tables Hummer stores named person, auction
// and bid, and copies the events into them: the people and auctions in one
// statement each, the bids by statements bids (INSERT INTO bid SELECT ...
// FROM gen_bid ...).
func storeNexmark(t *testing.T, ctx context.Context, conn *pgx.Conn, bids ...string) {
	t.Helper()
	gen := strings.NewReplacer("CREATE TABLE person", "CREATE TABLE gen_person", "CREATE TABLE auction", "CREATE TABLE gen_auction",
		"CREATE TABLE bid", "CREATE TABLE gen_bid").Replace(nexmarkDDL(t))
	stored := `CREATE TABLE person (id BIGINT, name TEXT, emailAddress TEXT, creditCard TEXT, city TEXT, state TEXT, dateTime TIMESTAMP, extra TEXT);
		CREATE TABLE auction (id BIGINT, itemName TEXT, description TEXT, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP, expires TIMESTAMP,
			seller BIGINT, category BIGINT, extra TEXT);
		CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT)`
	for _, q := range append([]string{gen, stored, "INSERT INTO person SELECT * FROM gen_person", "INSERT INTO auction SELECT * FROM gen_auction"}, bids...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestNexmarkQ12 runs q12, whose windows are of processing time, over
// 200,000 events: its answer depends on the clock, so the test checks its
// shape and totals: every bid counted once, in 10-second windows of the
// wall clock around the run, one row per bidder and window.
func TestNexmarkQ12(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := nexmarkConn(t, ctx)
	defer conn.Close(context.Background())
	sel := nexmarkSelect(t, "q12")
	var bids int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM bid").Scan(&bids); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Truncate(10 * time.Second)
	rows, err := conn.Query(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		bidder int64
		start  time.Time
	}
	seen := map[key]bool{}
	var total int64
	for rows.Next() {
		var bidder, n int64
		var from, to time.Time
		if err := rows.Scan(&bidder, &n, &from, &to); err != nil {
			t.Fatal(err)
		}
		k := key{bidder, from}
		if seen[k] || n <= 0 || to.Sub(from) != 10*time.Second || from.Truncate(10*time.Second) != from || from.Before(start) || from.After(time.Now()) {
			t.Fatalf("row %d, %d, %s, %s: a repeated window, an empty one, or not a 10-second window of the run's clock (from %s)", bidder, n, from, to, start)
		}
		seen[k] = true
		total += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if total != bids || bids == 0 {
		t.Errorf("q12 counted %d bids in %d rows; bid has %d", total, len(seen), bids)
	}
}

// nexmarkConn starts a server and returns a connection to it, the Nexmark
// tables declared over 200,000 events.
func nexmarkConn(t *testing.T, ctx context.Context) *pgx.Conn {
	t.Helper()
	conn := connectPgx(t, ctx, startTestServer(t))
	if _, err := conn.Exec(ctx, nexmarkDDL(t)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// nexmarkDDL is bench/nexmark/ddl.sql for 200,000 events, with q13's side
// input written to a temporary file: the keys 0 to 9999, each with its text.
func nexmarkDDL(t *testing.T) string {
	t.Helper()
	ddl, err := os.ReadFile("../../bench/nexmark/ddl.sql")
	if err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(t.TempDir(), "side_input.csv")
	var b strings.Builder
	for k := range 10000 {
		fmt.Fprintf(&b, "%d,%d\n", k, k)
	}
	if err := os.WriteFile(side, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("${EVENTS}", "200000", "${EVENT_RATE}", "2000", "${SIDE_INPUT}", side).Replace(string(ddl))
}

// nexmarkSelect returns query q of bench/nexmark: its INSERT's SELECT, as
// published.
func nexmarkSelect(t *testing.T, q string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("../../bench/nexmark", q+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	sel := strings.TrimRight(strings.TrimSpace(s[strings.Index(s, "INSERT INTO"):]), ";")
	return sel[strings.Index(sel, "\n")+1:]
}

// digest is the number of rows and the MD5 of their lines.
func digest(rows []string) string {
	return fmt.Sprintf("%d rows, md5 %x\n", len(rows), md5.Sum([]byte(strings.Join(rows, "\n"))))
}

// sortedRows runs q in the simple protocol (every value as text) and returns
// its rows, each its values joined by |, sorted.
func sortedRows(t *testing.T, ctx context.Context, conn *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var vals []string
		for _, v := range rows.RawValues() {
			if v == nil {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, string(v))
			}
		}
		out = append(out, strings.Join(vals, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// loadNexmark copies the three tables' events from Hummer into PostgreSQL,
// and makes q13's side input there by its definition: the keys 0 to 9999,
// each with its text.
func loadNexmark(t *testing.T, ctx context.Context, hummer, pg *pgx.Conn) {
	t.Helper()
	if _, err := pg.Exec(ctx, "DROP TABLE IF EXISTS side_input; CREATE TABLE side_input AS SELECT k AS key, k::text AS value FROM generate_series(0, 9999) AS k"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"person", "auction", "bid"} {
		rows, err := hummer.Query(ctx, "SELECT * FROM "+table, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for _, f := range rows.FieldDescriptions() {
			typ := "text"
			switch f.DataTypeOID {
			case 20:
				typ = "bigint"
			case 1114:
				typ = "timestamp"
			}
			cols = append(cols, f.Name+" "+typ)
		}
		var data [][]any
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, vals)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := pg.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %s; CREATE TABLE %s (%s)", table, table, strings.Join(cols, ", "))); err != nil {
			t.Fatal(err)
		}
		if _, err := pg.CopyFrom(ctx, pgx.Identifier{table}, namesOf(cols), pgx.CopyFromRows(data)); err != nil {
			t.Fatal(err)
		}
	}
}

func namesOf(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i], _, _ = strings.Cut(c, " ")
	}
	return out
}

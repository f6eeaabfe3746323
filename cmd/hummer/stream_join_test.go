package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSocketStreamJoin: a view joins two streams that never end (socket
// tables), LEFT and FULL: an order without a price shows NULL-padded until
// its item's price arrives, and a price no order matched shows in the FULL
// join until an order takes it. The rows expected are worked out by hand.
func TestSocketStreamJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	orders, prices := listenLines(t, "127.0.0.1:0"), listenLines(t, "127.0.0.1:0")
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE orders_in (id BIGINT, item TEXT) ENGINE=socket CONNECTION='socket://%s?format=csv'", orders.ln.Addr()),
		fmt.Sprintf("CREATE TABLE prices_in (item TEXT, price BIGINT) ENGINE=socket CONNECTION='socket://%s?format=csv'", prices.ln.Addr()),
		"CREATE VIEW lj AS SELECT o.id, o.item, p.price FROM orders_in AS o LEFT JOIN prices_in AS p ON o.item = p.item",
		"CREATE VIEW fj AS SELECT o.id, p.item, p.price FROM orders_in AS o FULL JOIN prices_in AS p ON o.item = p.item AND p.price < 100",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	view := func(q string) string {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return err.Error()
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return err.Error()
			}
			out = append(out, strings.Trim(fmt.Sprint(vals), "[]"))
		}
		return strings.Join(out, ";")
	}
	const lj = "SELECT id, item, price FROM lj ORDER BY id, price"
	const fj = "SELECT id, item, price FROM fj ORDER BY id NULLS FIRST, item, price"
	// Each view's job connects to both servers: two connections per server.
	var oc, pc [2]interface{ Write([]byte) (int, error) }
	for i := range 2 {
		oc[i], pc[i] = orders.accept(t, ctx), prices.accept(t, ctx)
	}
	write := func(cs [2]interface{ Write([]byte) (int, error) }, lines string) {
		t.Helper()
		for _, c := range cs {
			if _, err := c.Write([]byte(lines)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(oc, "1,apple\n2,pear\n")
	write(pc, "plum,5\n")
	waitFor(t, ctx, "orders without prices", func() bool {
		return view(lj) == "1 apple <nil>;2 pear <nil>" && view(fj) == "<nil> plum 5;1 <nil> <nil>;2 <nil> <nil>"
	})
	write(pc, "apple,3\napple,300\n")
	waitFor(t, ctx, "apple's prices", func() bool {
		return view(lj) == "1 apple 3;1 apple 300;2 pear <nil>" && view(fj) == "<nil> apple 300;<nil> plum 5;1 apple 3;2 <nil> <nil>"
	})
	write(oc, "3,plum\n")
	waitFor(t, ctx, "an order of plums", func() bool {
		return view(lj) == "1 apple 3;1 apple 300;2 pear <nil>;3 plum 5" && view(fj) == "<nil> apple 300;1 apple 3;2 <nil> <nil>;3 plum 5"
	})
}

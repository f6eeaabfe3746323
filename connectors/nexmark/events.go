package nexmark

import (
	"math"
	"strings"

	"github.com/hummer-db/hummer/exec/types"
)

// Field is one column of a Nexmark table.
type Field struct {
	Name string // as RisingWave's and Arroyo's Nexmark tables spell it
	Type types.Type
}

// Fields are each table's columns, in the order of the Flink suite's views.
// A table's DDL may declare any of them, by this name or the Flink suite's
// camel case (date_time or dateTime), in any order.
var Fields = [...][]Field{
	Person: {
		{"id", types.Int64Type}, {"name", types.StringType}, {"email_address", types.StringType},
		{"credit_card", types.StringType}, {"city", types.StringType}, {"state", types.StringType},
		{"date_time", types.TimestampType}, {"extra", types.StringType},
	},
	Auction: {
		{"id", types.Int64Type}, {"item_name", types.StringType}, {"description", types.StringType},
		{"initial_bid", types.Int64Type}, {"reserve", types.Int64Type}, {"date_time", types.TimestampType},
		{"expires", types.TimestampType}, {"seller", types.Int64Type}, {"category", types.Int64Type},
		{"extra", types.StringType},
	},
	Bid: {
		{"auction", types.Int64Type}, {"bidder", types.Int64Type}, {"price", types.Int64Type},
		{"channel", types.StringType}, {"url", types.StringType}, {"date_time", types.TimestampType},
		{"extra", types.StringType},
	},
}

// fieldIndex returns the position in Fields[k] of the column called name
// (case and underscores aside), or -1.
func fieldIndex(k Kind, name string) int {
	want := strings.ReplaceAll(strings.ToLower(name), "_", "")
	for i, f := range Fields[k] {
		if strings.ReplaceAll(f.Name, "_", "") == want {
			return i
		}
	}
	return -1
}

// event is one generated event: its fields by position in Fields[kind],
// integers (and timestamps, in microseconds) in ints, text in strs (slices
// of the generator's scratch buffer, valid until the next event).
type event struct {
	ints [10]int64
	strs [10][]byte
}

// generator makes the events of one table.
type generator struct {
	kind    Kind
	seed    int64
	baseMs  int64   // event time of event 0, milliseconds since the epoch
	delayUs float64 // event time between consecutive events
	extra   bool    // make the extra column (drawn last: leaving it out changes nothing else)
	buf     []byte
}

// timeMs is the event time of event n, in milliseconds, as the Flink
// generator's timestampForEvent computes it.
func (g *generator) timeMs(n int64) int64 {
	return g.baseMs + int64(float64(n)*g.delayUs)/1000
}

// make fills e with event n, which is of g's kind. It draws the fields in the
// order the Flink generator does.
func (g *generator) make(n int64, e *event) {
	r := eventRandom(n, g.seed)
	g.buf = g.buf[:0]
	ts := g.timeMs(n)
	// spans are the strings' places in g.buf, turned into slices at the end
	// since appending may move the buffer.
	var spans [10][2]int
	mark := func(i, start int) { spans[i] = [2]int{start, len(g.buf)} }
	switch g.kind {
	case Person:
		e.ints[0] = lastPerson(n) + firstPersonID
		start := len(g.buf)
		g.buf = append(g.buf, firstNames[r.IntN(int32(len(firstNames)))]...)
		g.buf = append(g.buf, ' ')
		g.buf = append(g.buf, lastNames[r.IntN(int32(len(lastNames)))]...)
		mark(1, start)
		start = len(g.buf)
		g.buf = appendString(g.buf, &r, 7, ' ')
		g.buf = append(g.buf, '@')
		g.buf = appendString(g.buf, &r, 5, ' ')
		g.buf = append(g.buf, ".com"...)
		mark(2, start)
		start = len(g.buf)
		for i := range 4 {
			if i > 0 {
				g.buf = append(g.buf, ' ')
			}
			v := r.IntN(10000)
			g.buf = append(g.buf, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
		}
		mark(3, start)
		start = len(g.buf)
		g.buf = append(g.buf, cities[r.IntN(int32(len(cities)))]...)
		mark(4, start)
		start = len(g.buf)
		g.buf = append(g.buf, states[r.IntN(int32(len(states)))]...)
		mark(5, start)
		e.ints[6] = ts * 1000
		if g.extra {
			start = len(g.buf)
			g.buf = appendExtra(g.buf, &r, 8+len(g.buf), avgPersonBytes)
			mark(7, start)
		}
	case Auction:
		e.ints[0] = lastAuction(n) + firstAuctionID
		var seller int64
		if r.IntN(hotSellerOdds) > 0 {
			seller = lastPerson(n) / hotSellerRatio * hotSellerRatio
		} else {
			seller = somePerson(n, &r)
		}
		e.ints[7] = seller + firstPersonID
		e.ints[8] = firstCategoryID + int64(r.IntN(numCategories))
		initial := price(&r)
		e.ints[3] = initial
		// An auction lasts on average until the numInFlightAuction-th auction
		// after it is created.
		ahead := int64(numInFlightAuction) * totalProportion / auctionProportion
		horizon := g.timeMs(n+ahead) - ts
		e.ints[6] = (ts + 1 + r.LongN(max(horizon*2, 1))) * 1000
		start := len(g.buf)
		g.buf = appendString(g.buf, &r, 20, ' ')
		mark(1, start)
		start = len(g.buf)
		g.buf = appendString(g.buf, &r, 100, ' ')
		mark(2, start)
		e.ints[4] = initial + price(&r)
		e.ints[5] = ts * 1000
		if g.extra {
			start = len(g.buf)
			g.buf = appendExtra(g.buf, &r, 8+len(g.buf)+5*8, avgAuctionBytes)
			mark(9, start)
		}
	case Bid:
		var auction int64
		if r.IntN(hotAuctionOdds) > 0 {
			auction = lastAuction(n) / hotAuctionRatio * hotAuctionRatio
		} else {
			auction = someAuction(n, &r)
		}
		e.ints[0] = auction + firstAuctionID
		var bidder int64
		if r.IntN(hotBidderOdds) > 0 {
			bidder = lastPerson(n)/hotBidderRatio*hotBidderRatio + 1
		} else {
			bidder = somePerson(n, &r)
		}
		e.ints[1] = bidder + firstPersonID
		e.ints[2] = price(&r)
		ch := channels()
		var name, url string
		if r.IntN(hotChannelOdds) > 0 {
			i := r.IntN(int32(len(hotChannel)))
			name, url = hotChannel[i], ch.hotURL[i]
		} else {
			i := r.IntN(numChannels)
			name, url = ch.name[i], ch.url[i]
		}
		start := len(g.buf)
		g.buf = append(g.buf, name...)
		mark(3, start)
		start = len(g.buf)
		g.buf = append(g.buf, url...)
		mark(4, start)
		e.ints[5] = ts * 1000
		if g.extra {
			start = len(g.buf)
			g.buf = appendExtra(g.buf, &r, 4*8, avgBidBytes)
			mark(6, start)
		}
	}
	for i, s := range spans {
		e.strs[i] = g.buf[s[0]:s[1]:s[1]]
	}
}

// abs32 is Java's Math.abs of an int: MinInt32 stays as it is.
func abs32(v int32) int32 {
	if v < 0 && v != math.MinInt32 {
		return -v
	}
	return v
}

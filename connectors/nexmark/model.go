package nexmark

import (
	"math"
	"math/bits"
	"strconv"
	"sync"
)

// The event model of Nexmark, as the nexmark/nexmark project's Flink generator
// (nexmark-flink/.../generator, itself Beam's) defines it with its default
// configuration: one sequence of events, numbered from 0, of which in every 50
// consecutive numbers 1 is a new person, 3 are new auctions and 46 are bids;
// event n happens at base + n*delay (delay: 1/rate, 100 µs at the default
// 10,000 events per second); bids go to hot auctions and come from hot bidders
// (the first auction or the second person of each hundred) half or three
// quarters of the time, and otherwise to an auction still in flight or a
// person among the 1,000 most recent, with a lead of 10 ids into the future.
//
// Where this differs from that generator, on purpose:
//   - every event draws its fields from java.util.Random seeded with its
//     number and the table's seed (eventRandom), much as Beam's generator
//     does, so an event depends on nothing but the two: parallel subtasks
//     can split the sequence any way and the three tables over one seed
//     describe one auction site (the Flink generator shares one unseeded
//     Random per subtask, so its data differs between runs);
//   - a bid's bidder gets FIRST_PERSON_ID added once, as in Beam (the Flink
//     generator adds it twice, which points most bids at people who do not
//     exist);
//   - the channels' URLs are drawn from seeded generators rather than
//     unseeded ones.
//
// Out-of-orderness: the generator emits each subtask's share in event-time
// order; events of different subtasks interleave, so the tables' DDL declares a
// watermark 4 seconds behind (as the Flink suite's ddl_gen.sql does).

const (
	firstAuctionID  = 1000
	firstPersonID   = 1000
	firstCategoryID = 10

	personProportion  = 1
	auctionProportion = 3
	bidProportion     = 46
	totalProportion   = personProportion + auctionProportion + bidProportion

	numCategories      = 5
	auctionIDLead      = 10
	personIDLead       = 10
	hotSellerRatio     = 100 // the first person of every hundred sells hot
	hotAuctionRatio    = 100 // the first auction of every hundred is hot
	hotBidderRatio     = 100 // the second person of every hundred bids hot
	hotAuctionOdds     = 2   // 1 - 1/2 of bids go to a hot auction
	hotSellerOdds      = 4   // 1 - 1/4 of auctions are a hot seller's
	hotBidderOdds      = 4   // 1 - 1/4 of bids are a hot bidder's
	hotChannelOdds     = 2   // 1 - 1/2 of bids come through a hot channel
	numChannels        = 10_000
	numActivePeople    = 1000
	numInFlightAuction = 100
	minStringLength    = 3

	avgPersonBytes  = 200
	avgAuctionBytes = 500
	avgBidBytes     = 100
)

// Kind is the kind of an event, and the table that holds it.
type Kind int

const (
	Person Kind = iota
	Auction
	Bid
)

func (k Kind) String() string { return [...]string{"person", "auction", "bid"}[k] }

// kindOf is the kind of event n.
func kindOf(n int64) Kind {
	switch r := n % totalProportion; {
	case r < personProportion:
		return Person
	case r < personProportion+auctionProportion:
		return Auction
	}
	return Bid
}

// eventRandom is the generator event n of a table seeded with seed draws
// from: java.util.Random seeded with a mix (SplitMix64's) of the two, since
// the first values of Randoms seeded with consecutive numbers are strongly
// correlated (seeded with n itself, as Beam's generator does, two thirds of
// the bids of a short run go to hot auctions instead of half).
func eventRandom(n, seed int64) javaRandom {
	z := uint64(n) + uint64(seed)*0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return newJavaRandom(int64(z ^ z>>31))
}

// lastPerson is the base-0 id of the last person created at or before event n.
func lastPerson(n int64) int64 {
	epoch, off := n/totalProportion, n%totalProportion
	if off >= personProportion {
		off = personProportion - 1
	}
	return epoch*personProportion + off
}

// lastAuction is the base-0 id of the last auction created at or before event n.
func lastAuction(n int64) int64 {
	epoch, off := n/totalProportion, n%totalProportion
	switch {
	case off < personProportion:
		epoch--
		off = auctionProportion - 1
	case off >= personProportion+auctionProportion:
		off = auctionProportion - 1
	default:
		off -= personProportion
	}
	return epoch*auctionProportion + off
}

// somePerson is a random recent person (base 0), perhaps a little ahead.
func somePerson(n int64, r *javaRandom) int64 {
	people := lastPerson(n) + 1
	active := min(people, numActivePeople)
	return people - active + r.LongN(active+personIDLead)
}

// someAuction is a random auction still in flight (base 0), perhaps a little ahead.
func someAuction(n int64, r *javaRandom) int64 {
	last := lastAuction(n)
	first := max(last-numInFlightAuction, 0)
	return first + r.LongN(last-first+1+auctionIDLead)
}

// price is a random price in cents, log-uniform from 1 to a million dollars.
func price(r *javaRandom) int64 {
	return int64(math.Floor(math.Pow(10, r.Float64()*6)*100 + 0.5))
}

// appendString appends a random string of 3 to maxLength-1 letters, with
// about one in 13 a special character, trimmed of spaces as Java's trim does.
func appendString(dst []byte, r *javaRandom, maxLength int32, special byte) []byte {
	start := len(dst)
	for n := minStringLength + r.IntN(maxLength-minStringLength); n > 0; n-- {
		if r.IntN(13) == 0 {
			dst = append(dst, special)
		} else {
			dst = append(dst, byte('a'+r.IntN(26)))
		}
	}
	if special != ' ' {
		return dst
	}
	s := dst[start:]
	lo, hi := 0, len(s)
	for lo < hi && s[lo] == ' ' {
		lo++
	}
	for hi > lo && s[hi-1] == ' ' {
		hi--
	}
	n := copy(dst[start:], s[lo:hi])
	return dst[:start+n]
}

// appendExtra appends the padding that brings an event of size bytes to avg
// bytes on average: letters six to a random int, as the generator makes them
// (a negative int gives characters below 'a', as there).
func appendExtra(dst []byte, r *javaRandom, size, avg int) []byte {
	if size > avg {
		return dst
	}
	avg -= size
	delta := int(math.Floor(float64(avg)*0.2 + 0.5))
	n := avg - delta
	if delta != 0 {
		n += int(r.IntN(int32(2 * delta)))
	}
	var v int32
	left := 0
	for ; n > 0; n-- {
		if left == 0 {
			v, left = r.Int(), 6
		}
		dst = append(dst, byte(int32('a')+v%26))
		v /= 26
		left--
	}
	return dst
}

var (
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	cities     = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	states     = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	hotChannel = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// channels holds the hot channels' URLs and the other channels' names and
// URLs, drawn once from generators seeded with the channel's number.
var channels = sync.OnceValue(func() (c struct{ hotURL, name, url []string }) {
	baseURL := func(r *javaRandom) string {
		b := []byte("https://www.nexmark.com/")
		for range 3 {
			b = appendString(b, r, 5, '_')
			b = append(b, '/')
		}
		return string(append(b, "item.htm?query=1"...))
	}
	for i := range hotChannel {
		r := newJavaRandom(-1 - int64(i))
		c.hotURL = append(c.hotURL, baseURL(&r))
	}
	for i := range numChannels {
		r := newJavaRandom(int64(i))
		u := baseURL(&r)
		if r.IntN(10) > 0 {
			u += "&channel_id=" + strconv.Itoa(int(abs32(int32(bits.Reverse32(uint32(i))))))
		}
		c.name = append(c.name, "channel-"+strconv.Itoa(i))
		c.url = append(c.url, u)
	}
	return c
})

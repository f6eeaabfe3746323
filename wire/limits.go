package wire

import (
	"net"
	"sync"
	"time"
)

// Connection limits beyond Options.MaxConnections.
const (
	// DefaultMaxConnections is Options.MaxConnections when it is 0 (PostgreSQL's
	// max_connections default).
	DefaultMaxConnections = 100
	// DefaultSuperuserReserved is PostgreSQL's superuser_reserved_connections
	// default, and hummer's (--superuser-reserved-connections).
	DefaultSuperuserReserved = 3
	// maxRejecting bounds the connections, beyond MaxConnections, that are read
	// up to their startup packet to be told 53300 too_many_connections (or to
	// deliver a CancelRequest); past it a new connection is closed at once.
	maxRejecting = 64
)

// Cancel requests carry a 31-bit process ID and a 32-bit secret, both random
// (crypto/rand): guessing one takes about 2^62 tries. A failed request costs a
// token from its host's bucket and from a global one; while either is empty,
// cancel requests are ignored, so guessing runs at most at these rates.
const (
	cancelHostBurst   = 10
	cancelHostRate    = 1.0 // tokens a second
	cancelGlobalBurst = 100
	cancelGlobalRate  = 20.0
	// cancelMaxHosts bounds the per-host buckets kept; past it the full ones
	// are forgotten (and, in an attack from very many hosts, all of them: the
	// global bucket still holds).
	cancelMaxHosts = 4096
)

type bucket struct {
	tokens float64
	last   time.Time
}

// refill adds the tokens earned since the last update, up to burst.
func (b *bucket) refill(now time.Time, rate, burst float64) {
	if b.last.IsZero() {
		b.tokens, b.last = burst, now
		return
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(burst, b.tokens+dt*rate)
		b.last = now
	}
}

// cancelLimiter rate-limits failed cancel requests. Its methods are safe for
// concurrent use.
type cancelLimiter struct {
	mu     sync.Mutex
	hosts  map[string]*bucket // mu.
	global bucket             // mu.
}

// allow reports whether a cancel request from host may be looked at now.
func (l *cancelLimiter) allow(host string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.global.refill(now, cancelGlobalRate, cancelGlobalBurst)
	if l.global.tokens < 1 {
		return false
	}
	b := l.hosts[host]
	if b == nil {
		return true
	}
	b.refill(now, cancelHostRate, cancelHostBurst)
	return b.tokens >= 1
}

// failed charges host for a cancel request that matched no connection.
func (l *cancelLimiter) failed(host string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.global.refill(now, cancelGlobalRate, cancelGlobalBurst)
	l.global.tokens = max(0, l.global.tokens-1)
	if l.hosts == nil {
		l.hosts = map[string]*bucket{}
	}
	b := l.hosts[host]
	if b == nil {
		if len(l.hosts) >= cancelMaxHosts {
			l.pruneLocked(now)
		}
		b = &bucket{}
		l.hosts[host] = b
	}
	b.refill(now, cancelHostRate, cancelHostBurst)
	b.tokens = max(0, b.tokens-1)
}

// pruneLocked forgets the hosts whose buckets have refilled, or every host if
// that is not enough. Lock should be held.
func (l *cancelLimiter) pruneLocked(now time.Time) {
	for h, b := range l.hosts {
		b.refill(now, cancelHostRate, cancelHostBurst)
		if b.tokens >= cancelHostBurst {
			delete(l.hosts, h)
		}
	}
	if len(l.hosts) >= cancelMaxHosts {
		clear(l.hosts)
	}
}

// limitKey is the host a request counts against: its IP address, or its /64
// for IPv6, where one client commonly holds a whole /64.
func limitKey(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	if ip4 := tcp.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return tcp.IP.Mask(net.CIDRMask(64, 128)).String()
}

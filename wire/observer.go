package wire

import "time"

// Observer is told what the server does, for metrics (the web package's
// Prometheus collectors are one). Its methods are called on connection
// goroutines, once per connection or statement, and must be cheap and safe for
// concurrent use.
type Observer interface {
	// Connection is told true when a connection is accepted and false when it
	// ends.
	Connection(open bool)
	// Statement is told that a statement (a simple query, or an Execute of the
	// extended protocol) ran for d.
	Statement(d time.Duration)
	// Error is told the SQLSTATE of each error answered to a client.
	Error(code string)
}

// observe calls f with the server's Observer, if it has one.
func (s *Server) observe(f func(Observer)) {
	if s.opts.Observer != nil {
		f(s.opts.Observer)
	}
}

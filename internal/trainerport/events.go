package trainerport

import "slices"

// Listener hears of the connections of a Server, as explicit events, and
// of nothing else: what the calls ask is the receivers' business.
//
// For each connection admitted (within Limits.MaxConns), in this order:
// ConnOpened once; ConnCarries for each trainer name its calls carry, the
// first time each is carried and for at most MaxNamesPerConn names; and
// ConnClosed once the connection has ended and every call of it has been
// answered, with the names it carried. conn numbers the connection, from
// 1, uniquely for the life of the Server. A call carries a trainer's name
// when its decoded argument is a wire.Caller naming one; ConnCarries is
// called before the call reaches its receiver.
//
// The events of one connection come one after the other, from the
// goroutines that serve it, those of different connections concurrently;
// a Listener must not block long, for its connection is not read
// meanwhile.
type Listener interface {
	ConnOpened(conn uint64, remote string)
	ConnCarries(conn uint64, trainer string)
	ConnClosed(conn uint64, trainers []string)
}

// MaxNamesPerConn bounds the trainer names one connection is followed for:
// a trainer sends one; a client that sends more is only followed for its
// first ones.
const MaxNamesPerConn = 4

// opened tells the listeners that c is served.
func (c *trainerConn) opened() {
	for _, l := range c.sv.listeners {
		l.ConnOpened(c.id, c.remote)
	}
}

// carries notes that a call on c carried trainer's name, and tells the
// listeners when it is a new one. Only c's reading goroutine calls it.
func (c *trainerConn) carries(trainer string) {
	if trainer == "" || len(c.names) >= MaxNamesPerConn || slices.Contains(c.names, trainer) {
		return
	}
	c.names = append(c.names, trainer)
	for _, l := range c.sv.listeners {
		l.ConnCarries(c.id, trainer)
	}
}

// closed tells the listeners that c has ended.
func (c *trainerConn) closed() {
	for _, l := range c.sv.listeners {
		l.ConnClosed(c.id, slices.Clip(c.names))
	}
}

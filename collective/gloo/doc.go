// Package gloo binds the Gloo collective library (github.com/facebookincubator/gloo,
// Debian's libgloo-dev) to collective.Comm, and registers it with the
// collective package as "gloo":
//
//	import _ "github.com/faster-training/faster/collective/gloo"
//
//	cfg, err := collective.FromEnv()
//	comm, err := collective.Open("gloo", cfg)
//
// Rank 0 serves the rendezvous store (collective.StoreServer) at
// Config.Addr:Config.Port in-process; every rank dials it, publishes the
// address of its Gloo TCP device under the communicator's key prefix and
// connects to every other rank (a full mesh). A rank listens on the local
// address of its connection to the store, an address that rank 0's host
// reaches; set GLOO_SOCKET_IFNAME, as for torch, to listen on a named
// network interface instead.
//
// All-reduce uses Gloo's ring algorithm: the result is the same bits on
// every rank, though the order of the sum depends on the element's place
// in the ring, not on the rank order. A failed operation tears the
// communicator down (the peers see their connections close) and every
// later operation returns the same error; an error caused by a connection
// or a timeout wraps collective.ErrPeer.
//
// Beside Gloo's connections each pair of ranks holds a watch connection
// that carries only a goodbye byte on Close: a rank that ends without it
// is lost, and the operations of the others fail within a second with
// ErrPeer naming it, where Gloo alone sometimes waits out its timeout
// (see watch.go).
//
// Without cgo the package builds but Open returns an error and "gloo" is
// not registered.
package gloo

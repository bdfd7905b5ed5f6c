// Package collective runs collective operations — all-reduce, broadcast,
// barrier — over a group of ranks, the way torch.distributed does: ranks
// meet through a key-value store at MASTER_ADDR:MASTER_PORT, served by the
// launcher (torchrun's agent, or package launch) or else by rank 0, in
// torch's TCPStore protocol (env RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE…, as torchrun sets them), then
// a collective library (Gloo, in collective/gloo) connects them.
//
// Local groups (NewLocal) run the same operations between goroutines of
// one process; data-parallel training uses them for its replicas.
package collective

import (
	"errors"
	"fmt"
	"time"

	"github.com/faster-training/faster/internal/registry"
)

// Comm is one rank's handle on a group. Its operations block until every
// rank of the group has made the same call; all ranks must call them in the
// same order. A Comm is used from one goroutine at a time; Fork gives an
// independent one for a second goroutine.
type Comm interface {
	Rank() int
	Size() int
	// AllReduceF32 sums x element-wise over the ranks, in place; every rank
	// gets the same bits.
	AllReduceF32(x []float32) error
	// AllReduceF64 is AllReduceF32 for float64.
	AllReduceF64(x []float64) error
	// Broadcast copies root's x into every other rank's x.
	Broadcast(x []float32, root int) error
	// Barrier returns once every rank has called it.
	Barrier() error
	// Fork makes an independent communicator over the same ranks (its own
	// connections and ordering), named so that every rank forks the same
	// one.
	Fork(name string) (Comm, error)
	// Close releases the connections. A peer that is still waiting on this
	// rank gets an error.
	Close() error
}

// InProcess reports whether every rank of c's group lives in this
// process (NewLocal's groups: replicas on the devices of one process), so
// a device library may sum their tensors without the host. A Comm says so
// by a method InProcess() bool; any other is taken to span processes.
func InProcess(c Comm) bool {
	l, ok := c.(interface{ InProcess() bool })
	return ok && l.InProcess()
}

// Config says how one rank joins a group.
type Config struct {
	Rank, Size int
	// Addr and Port are where rank 0 serves the rendezvous store
	// (MASTER_ADDR, MASTER_PORT).
	Addr string
	Port int
	// Timeout bounds the rendezvous and every operation (0: 60 s). A peer
	// that dies makes the operations of the others fail as soon as its
	// connections close, well before the timeout.
	Timeout time.Duration
	// AgentStore says that a launcher serves the store at Addr:Port
	// (torchrun's agent, or launch.Run): no rank serves it, rank 0
	// included (TORCHELASTIC_USE_AGENT_STORE=True).
	AgentStore bool
	// StorePrefix goes in front of every store key of the group, as
	// torch's PrefixStore: "/worker/attempt_<n>/" under an agent store, n
	// being TORCHELASTIC_RESTART_COUNT, so that a restarted group does not
	// read its predecessor's keys.
	StorePrefix string
	// LocalRank and LocalSize place the rank on its machine (LOCAL_RANK,
	// LOCAL_WORLD_SIZE; 0 when unset), GroupRank is the machine's index
	// (GROUP_RANK). They decide no collective; they size a rank's share of
	// the machine (threads).
	LocalRank, LocalSize, GroupRank int
}

// ErrPeer marks a failure caused by another rank (it died, closed its
// connections or timed out).
var ErrPeer = errors.New("collective: peer failed")

// Factory opens a rank's communicator for a library.
type Factory func(Config) (Comm, error)

var libraries registry.Registry[Factory]

// Register makes a collective library available to Open under name
// (collective/gloo registers "gloo" from its init function).
func Register(name string, f Factory) { libraries.Register(name, f) }

// Libraries lists the registered names, sorted.
func Libraries() []string { return libraries.Names() }

// Open joins the group described by c through the library registered as
// name.
func Open(name string, c Config) (Comm, error) {
	f, ok := libraries.Get(name)
	if !ok {
		return nil, fmt.Errorf("collective: no library %q (have %v; the gloo library needs a cgo build)", name, Libraries())
	}
	return f(c)
}

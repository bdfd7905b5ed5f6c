// Package launch starts the ranks of a distributed job, as torchrun does:
// LOCAL_WORLD_SIZE processes of one command on each of NNODES machines,
// every one told its place by the environment torch's launcher sets:
//
//	RANK              this rank, GROUP_RANK*LOCAL_WORLD_SIZE + LOCAL_RANK
//	LOCAL_RANK        its index on this machine
//	WORLD_SIZE        NNODES*LOCAL_WORLD_SIZE
//	LOCAL_WORLD_SIZE  the ranks on this machine
//	GROUP_RANK        this machine's index (--node-rank), GROUP_WORLD_SIZE NNODES
//	MASTER_ADDR, MASTER_PORT
//	                  where the rendezvous store is served
//	TORCHELASTIC_USE_AGENT_STORE=True, TORCHELASTIC_RESTART_COUNT=0
//	                  the store is the launcher's: no rank serves it
//
// The launcher of node 0 serves the rendezvous store at MASTER_PORT (torch's
// TCPStore protocol, collective.StoreServer), as torchrun's agent does, so
// ranks started by either launcher join the same way (collective.FromEnv).
//
// Output: rank 0 of node 0 writes to Options.Stdout and Options.Stderr
// directly; every other rank's stderr goes to Options.Stderr a line at a
// time, each line prefixed with "[rank N] ". Lines of any length pass (a
// long one in pieces); a rank never blocks on its output.
//
// Failure: when a rank fails the others are left to fail on their own
// (their collectives see the dead peer within milliseconds); those still
// running after Options.Grace are killed. On interrupt (ctx done) every
// rank gets one SIGINT, and those still running after the grace are
// killed. Run joins every process and goroutine it starts before it
// returns.
package launch

package launch

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/faster-training/faster/collective"
)

// Node is this machine's place in a job: what the launcher is told by its
// caller (faster train's --nproc, --nnodes, --node-rank, --master-addr,
// --master-port) before Options are made of it.
type Node struct {
	NProc, NNodes, NodeRank int
	MasterAddr              string
	MasterPort              int
}

// Node's settings by name, as PETDefaults reports them.
const (
	SetNProc      = "NProc"
	SetNNodes     = "NNodes"
	SetNodeRank   = "NodeRank"
	SetMasterAddr = "MasterAddr"
	SetMasterPort = "MasterPort"
)

// EnvError is a variable whose value cannot be the setting it stands for.
type EnvError struct {
	Var, Value string
	Setting    string // one of the Set* names
	Err        error
}

func (e *EnvError) Error() string { return fmt.Sprintf("%s=%s: %v", e.Var, QuoteShort(e.Value), e.Err) }
func (e *EnvError) Unwrap() error { return e.Err }

// QuoteShort is v Go-quoted, a value over 200 bytes cut short with its
// length: one readable line.
func QuoteShort(v string) string {
	if len(v) > 200 {
		return fmt.Sprintf("%q… (%d bytes)", v[:200], len(v))
	}
	return strconv.Quote(v)
}

// PETDefaults gives the settings of n that given does not report set
// torchrun's defaults from the environment (lookup; Kubeflow's PyTorchJob
// sets them): NProc from PET_NPROC_PER_NODE ("auto" or "cpu": this
// machine's CPUs, as torchrun without GPUs), NNodes from PET_NNODES ("N",
// or "N:N"; an elastic range is refused), NodeRank, MasterAddr and
// MasterPort from PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT. A
// PyTorchJob v1 pod's RANK counts pods, and its MASTER_ADDR and MASTER_PORT
// are the master pod's: with PET_NNODES set they stand for PET_NODE_RANK,
// PET_MASTER_ADDR and PET_MASTER_PORT when those are absent, and NProc not
// given and not set is 1 (torchrun's default --nproc_per_node); Run then
// gives each of its processes its own RANK (node rank × nproc + local
// rank) and WORLD_SIZE (nnodes × nproc). It returns, by setting name, the
// variable each numeric setting was read from with its value
// (`PET_NNODES="2"`); a value that cannot be its setting is an *EnvError.
func PETDefaults(n *Node, given func(setting string) bool, lookup func(string) (string, bool)) (map[string]string, error) {
	read := map[string]string{}
	get := func(names ...string) (string, string) {
		for _, name := range names {
			if v, ok := lookup(name); ok && v != "" {
				return name, v
			}
		}
		return "", ""
	}
	set := func(setting string, dst *int, parse func(string) (int, error), names ...string) error {
		if given(setting) {
			return nil
		}
		name, v := get(names...)
		if name == "" {
			return nil
		}
		x, err := parse(v)
		if err != nil {
			return &EnvError{Var: name, Value: v, Setting: setting, Err: err}
		}
		*dst = x
		read[setting] = name + "=" + QuoteShort(v)
		return nil
	}
	_, inJob := lookup("PET_NNODES")
	rankNames, addrNames, portNames := []string{"PET_NODE_RANK"}, []string{"PET_MASTER_ADDR"}, []string{"PET_MASTER_PORT"}
	if inJob {
		rankNames, addrNames, portNames = append(rankNames, "RANK"), append(addrNames, "MASTER_ADDR"), append(portNames, "MASTER_PORT")
	}
	for _, s := range []struct {
		setting string
		dst     *int
		parse   func(string) (int, error)
		names   []string
	}{
		{SetNProc, &n.NProc, parseNProc, []string{"PET_NPROC_PER_NODE"}},
		{SetNNodes, &n.NNodes, parseNNodes, []string{"PET_NNODES"}},
		{SetNodeRank, &n.NodeRank, parseRank, rankNames},
		{SetMasterPort, &n.MasterPort, parsePort, portNames},
	} {
		if err := set(s.setting, s.dst, s.parse, s.names...); err != nil {
			return read, err
		}
	}
	if !given(SetMasterAddr) {
		if _, v := get(addrNames...); v != "" {
			n.MasterAddr = v
		}
	}
	if inJob && n.NProc == 0 && !given(SetNProc) {
		n.NProc = 1 // torchrun's default --nproc_per_node
	}
	return read, nil
}

func parseRank(v string) (int, error) {
	x, err := strconv.Atoi(v)
	if err != nil || x < 0 {
		return 0, fmt.Errorf("want a non-negative integer")
	}
	return x, nil
}

// parseNProc reads a count of ranks on a machine, or auto (or cpu): this
// machine's CPUs, as torchrun without GPUs.
func parseNProc(v string) (int, error) {
	if v == "auto" || v == "cpu" {
		return runtime.NumCPU(), nil
	}
	x, err := strconv.Atoi(v)
	if err != nil || x < 1 || x > MaxNProc {
		return 0, fmt.Errorf("want 1 to %d ranks on a machine, or auto", MaxNProc)
	}
	return x, nil
}

// parseNNodes reads N, or N:N (an elastic range is refused).
func parseNNodes(v string) (int, error) {
	lo, hi, ok := strings.Cut(v, ":")
	if ok && lo != hi {
		return 0, fmt.Errorf("an elastic range: faster trains a fixed group; give one count")
	}
	x, err := strconv.Atoi(lo)
	if err != nil || x < 1 || x > collective.MaxSize {
		return 0, fmt.Errorf("want 1 to %d machines", collective.MaxSize)
	}
	return x, nil
}

func parsePort(v string) (int, error) {
	x, err := strconv.Atoi(v)
	if err != nil || x < 1 || x > 65535 {
		return 0, fmt.Errorf("want a port number 1-65535")
	}
	return x, nil
}

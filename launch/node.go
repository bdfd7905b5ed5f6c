package launch

import (
	"errors"
	"fmt"

	"github.com/faster-training/faster/collective"
)

// DefaultMasterPort is torchrun's default --master-port: the store's port
// of several nodes when none is given.
const DefaultMasterPort = 29500

// Check reports every problem of n as its caller was given it, each
// setting worded by name (faster train: "--nnodes" for SetNNodes). NProc
// 0 is no launch, which takes no other node setting. Several nodes
// without a MasterPort get DefaultMasterPort.
func (n *Node) Check(name func(setting string) string) []string {
	var problems []string
	if n.NNodes < 1 {
		problems = append(problems, name(SetNNodes)+" must be positive")
	}
	if n.NodeRank < 0 || n.NodeRank >= max(n.NNodes, 1) {
		problems = append(problems, fmt.Sprintf("%s %d: want 0 … %s-1", name(SetNodeRank), n.NodeRank, name(SetNNodes)))
	}
	if (n.NNodes > 1 || n.NodeRank > 0 || n.MasterAddr != "" || n.MasterPort != 0) && n.NProc == 0 {
		problems = append(problems, fmt.Sprintf("%s, %s, %s and %s go with %s",
			name(SetNNodes), name(SetNodeRank), name(SetMasterAddr), name(SetMasterPort), name(SetNProc)))
	}
	if n.NProc > MaxNProc {
		problems = append(problems, fmt.Sprintf("%s %d: want at most %d ranks on a machine", name(SetNProc), n.NProc, MaxNProc))
	} else if n.NProc > 0 && n.NNodes > collective.MaxSize/n.NProc { // the product, checked before it is formed
		problems = append(problems, fmt.Sprintf("%s %d × %s %d: more than %d ranks", name(SetNNodes), n.NNodes, name(SetNProc), n.NProc, collective.MaxSize))
	}
	if n.MasterPort < 0 || n.MasterPort > 65535 {
		problems = append(problems, fmt.Sprintf("%s %d: want 1-65535", name(SetMasterPort), n.MasterPort))
	}
	if n.NNodes > 1 {
		if n.MasterAddr == "" {
			problems = append(problems, fmt.Sprintf("%s > 1 needs %s: an address of node 0 that every node reaches", name(SetNNodes), name(SetMasterAddr)))
		}
		if n.MasterPort == 0 {
			n.MasterPort = DefaultMasterPort
		}
	}
	return problems
}

// PETNode is PETDefaults with its problems worded for the caller, each
// setting by name (faster train: "--nproc" for SetNProc), a value read
// from a variable as that variable "(the default of --nproc)": a value
// that cannot be its setting, and what Check checks of the settings read
// (the node rank below the nodes, the world's size bounded, by division
// before the product is formed).
func PETNode(n *Node, name func(setting string) string, given func(setting string) bool, lookup func(string) (string, bool)) error {
	read, err := PETDefaults(n, given, lookup)
	var ee *EnvError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s=%s (the default of %s): %v", ee.Var, QuoteShort(ee.Value), name(ee.Setting), ee.Err)
	}
	// as names a value as it was given: the variable read, or the setting.
	as := func(setting string, v int) string {
		if g, ok := read[setting]; ok {
			return g + " (the default of " + name(setting) + ")"
		}
		return fmt.Sprintf("%s %d", name(setting), v)
	}
	_, np := read[SetNProc]
	_, nn := read[SetNNodes]
	_, nr := read[SetNodeRank]
	if (nr || nn) && n.NodeRank >= max(n.NNodes, 1) {
		return fmt.Errorf("%s: want less than %s", as(SetNodeRank, n.NodeRank), as(SetNNodes, n.NNodes))
	}
	if (np || nn) && n.NProc > 0 && n.NNodes > collective.MaxSize/n.NProc {
		return fmt.Errorf("%s × %s: more than %d ranks", as(SetNNodes, n.NNodes), as(SetNProc, n.NProc), collective.MaxSize)
	}
	return nil
}

package launch

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/faster-training/faster/collective"
)

// flagName words a setting as faster train's flag does.
func flagName(setting string) string {
	return map[string]string{SetNProc: "--nproc", SetNNodes: "--nnodes", SetNodeRank: "--node-rank",
		SetMasterAddr: "--master-addr", SetMasterPort: "--master-port"}[setting]
}

// TestNodeCheck checks every problem of a node's settings at once, each
// setting worded by the caller (moved from faster train's checkNodes, whose
// CLI tests run it end to end), and the default port of several nodes.
func TestNodeCheck(t *testing.T) {
	for _, c := range []struct {
		n    Node
		want []string
		port int
	}{
		{Node{NNodes: 1}, nil, 0},
		{Node{NProc: 2, NNodes: 2, NodeRank: 1, MasterAddr: "h"}, nil, DefaultMasterPort},
		{Node{NProc: 2, NNodes: 2, MasterAddr: "h", MasterPort: 7}, nil, 7},
		{Node{NNodes: 0}, []string{"--nnodes must be positive"}, 0},
		{Node{NNodes: 0, NodeRank: 1}, []string{"--nnodes must be positive", "--node-rank 1: want 0 … --nnodes-1",
			"--nnodes, --node-rank, --master-addr and --master-port go with --nproc"}, 0},
		{Node{NNodes: 2, NodeRank: 2, MasterPort: 70000}, []string{"--node-rank 2: want 0 … --nnodes-1",
			"--nnodes, --node-rank, --master-addr and --master-port go with --nproc", "--master-port 70000: want 1-65535",
			"--nnodes > 1 needs --master-addr: an address of node 0 that every node reaches"}, 70000},
		{Node{NProc: MaxNProc + 1, NNodes: 1}, []string{fmt.Sprintf("--nproc %d: want at most %d ranks on a machine", MaxNProc+1, MaxNProc)}, 0},
		{Node{NProc: 4, NNodes: 1 << 62, MasterAddr: "h"}, []string{fmt.Sprintf("--nnodes %d × --nproc 4: more than %d ranks", 1<<62, collective.MaxSize)}, DefaultMasterPort},
	} {
		n := c.n
		if got := n.Check(flagName); !reflect.DeepEqual(got, c.want) || n.MasterPort != c.port {
			t.Errorf("%+v: %q port %d, want %q port %d", c.n, got, n.MasterPort, c.want, c.port)
		}
	}
}

// TestPETNode checks PyTorchJob's variables as the launcher's defaults: a
// value worded as the variable read "(the default of --flag)", a setting
// given wins over its variable, and what Check bounds, bounded as read.
func TestPETNode(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	none := func(string) bool { return false }
	for _, c := range []struct {
		env   []string
		given func(string) bool
		want  string
	}{
		{[]string{"PET_NNODES", "x"}, none, `PET_NNODES="x" (the default of --nnodes): `},
		{[]string{"PET_NNODES", "2", "RANK", "5"}, none, `RANK="5" (the default of --node-rank): want less than PET_NNODES="2" (the default of --nnodes)`},
		{[]string{"PET_NNODES", "65536", "PET_NPROC_PER_NODE", "65536"}, none,
			fmt.Sprintf(`PET_NNODES="65536" (the default of --nnodes) × PET_NPROC_PER_NODE="65536" (the default of --nproc): more than %d ranks`, collective.MaxSize)},
		{[]string{"PET_NNODES", "1024", "PET_NPROC_PER_NODE", "4"}, func(s string) bool { return s == SetNProc },
			fmt.Sprintf(`PET_NNODES="1024" (the default of --nnodes) × --nproc 65536: more than %d ranks`, collective.MaxSize)},
	} {
		n := Node{NNodes: 1, NProc: 65536}
		err := PETNode(&n, flagName, c.given, env(c.env...))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %s", c.env, err, c.want)
		}
	}
	n := Node{NNodes: 1}
	if err := PETNode(&n, flagName, func(string) bool { return false }, env("PET_NNODES", "2", "PET_NPROC_PER_NODE", "2", "RANK", "1", "MASTER_ADDR", "m")); err != nil ||
		n != (Node{NProc: 2, NNodes: 2, NodeRank: 1, MasterAddr: "m"}) {
		t.Errorf("a pod: %+v %v", n, err)
	}
}

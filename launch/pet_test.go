package launch

import (
	"errors"
	"strings"
	"testing"
)

// PyTorchJob's variables fill what the caller did not give: a v1 pod's
// RANK, MASTER_ADDR and MASTER_PORT stand for the PET_ ones under
// PET_NNODES; given settings are kept; a bad value is an *EnvError naming
// the variable and the setting.
func TestPETDefaults(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	none := func(string) bool { return false }
	pod := env("PET_NNODES", "2", "RANK", "1", "MASTER_ADDR", "master-0", "MASTER_PORT", "23456")
	var n Node
	read, err := PETDefaults(&n, none, pod)
	if want := (Node{NProc: 1, NNodes: 2, NodeRank: 1, MasterAddr: "master-0", MasterPort: 23456}); err != nil || n != want {
		t.Fatalf("pod: %+v %v, want %+v", n, err, want)
	}
	if read[SetNodeRank] != `RANK="1"` || read[SetNNodes] != `PET_NNODES="2"` {
		t.Errorf("read %q", read)
	}
	n = Node{NProc: 3, MasterAddr: "b"}
	given := func(s string) bool { return s == SetNProc || s == SetMasterAddr }
	if _, err := PETDefaults(&n, given, pod); err != nil || n.NProc != 3 || n.MasterAddr != "b" || n.NNodes != 2 {
		t.Errorf("given settings: %+v %v", n, err)
	}
	long := strings.Repeat("9", 300)
	for _, c := range []struct{ k, v, setting string }{
		{"PET_NNODES", "1:4", SetNNodes}, {"PET_NPROC_PER_NODE", long, SetNProc}, {"PET_MASTER_PORT", "70000", SetMasterPort},
	} {
		var ee *EnvError
		_, err := PETDefaults(&Node{}, none, env(c.k, c.v))
		if !errors.As(err, &ee) || ee.Var != c.k || ee.Setting != c.setting || len(err.Error()) > 400 {
			t.Errorf("%s=%.20s: %v", c.k, c.v, err)
		}
	}
}

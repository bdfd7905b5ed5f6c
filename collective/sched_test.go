package collective

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

var hostlists = []struct {
	list string
	want []string
}{
	{"node01", []string{"node01"}},
	{"node[01-03,07],gpu-a[1-2]", []string{"node01", "node02", "node03", "node07", "gpu-a1", "gpu-a2"}},
	{"a,b,c", []string{"a", "b", "c"}},
	{"x[9-11]", []string{"x9", "x10", "x11"}},
	{"x[009-011]", []string{"x009", "x010", "x011"}},
	{"r[1-2]n[8-9]", []string{"r1n8", "r1n9", "r2n8", "r2n9"}},
	{"gpu-a[1],cpu[3-4,6]", []string{"gpu-a1", "cpu3", "cpu4", "cpu6"}},
	{"host-1.example.org", []string{"host-1.example.org"}},
}

func TestExpandHostlist(t *testing.T) {
	for _, c := range hostlists {
		got, err := ExpandHostlist(c.list)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v %v, want %v", c.list, got, err, c.want)
		}
	}
	// Slurm 22.05's scontrol refuses a suffix after the brackets; we expand it.
	if got, _ := ExpandHostlist("n[1-2]-ib"); !slices.Equal(got, []string{"n1-ib", "n2-ib"}) {
		t.Errorf("n[1-2]-ib: %v", got)
	}
	for _, bad := range []string{"", "n[1-", "n]1[", "n[[1]]", "n[3-1]", "n[a-b]", "n[1-2"} {
		if got, err := ExpandHostlist(bad); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}

// Slurm's own expansion (scontrol show hostnames, with a minimal
// slurm.conf: it needs no daemon) agrees with ours on every form.
func TestExpandHostlistScontrol(t *testing.T) {
	scontrol, err := exec.LookPath("scontrol")
	if err != nil {
		testenv.MissingInterop(t, "scontrol missing (slurm-wlm)")
	}
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	os.WriteFile(conf, []byte("ClusterName=t\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\nPartitionName=p Nodes=localhost\n"), 0o644)
	for _, c := range hostlists {
		cmd := exec.Command(scontrol, "show", "hostnames", c.list)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("scontrol show hostnames %q: %v", c.list, err)
		}
		if got := strings.Fields(string(out)); !slices.Equal(got, c.want) {
			t.Errorf("%q: scontrol says %v, our table %v", c.list, got, c.want)
		}
	}
}

func TestTasksOnNode(t *testing.T) {
	for _, c := range []struct {
		spec       string
		node, want int
	}{{"2", 0, 2}, {"2(x3),1", 2, 2}, {"2(x3),1", 3, 1}, {"1,4", 1, 4}} {
		if got, err := TasksOnNode(c.spec, c.node); err != nil || got != c.want {
			t.Errorf("%q node %d: %d %v, want %d", c.spec, c.node, got, err, c.want)
		}
	}
	for _, bad := range []string{"x", "2(x0)", "2(x3)"} {
		if _, err := TasksOnNode(bad, 3); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestConfigFromSchedulers(t *testing.T) {
	srun := []string{"SLURM_PROCID", "3", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1",
		"SLURM_NODEID", "1", "SLURM_TASKS_PER_NODE", "2(x2)", "SLURM_JOB_NODELIST", "gpu[07-08]", "SLURM_JOB_ID", "123456"}
	ompi := []string{"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "2"}
	for _, c := range []struct {
		name string
		env  []string
		want Config
	}{
		{"srun", srun, Config{Rank: 3, Size: 4, Addr: "gpu07", Port: 15000 + 123456%10000, LocalRank: 1, LocalSize: 2, GroupRank: 1}},
		{"srun, MASTER_* set", append(srun[:len(srun):len(srun)], "MASTER_ADDR", "m", "MASTER_PORT", "999"),
			Config{Rank: 3, Size: 4, Addr: "m", Port: 999, LocalRank: 1, LocalSize: 2, GroupRank: 1}},
		{"srun, the step's own list and counts", append(srun[:len(srun):len(srun)], "SLURM_STEP_NODELIST", "gpu08", "SLURM_STEP_NUM_TASKS", "2",
			"SLURM_PROCID", "1", "SLURM_NODEID", "0", "SLURM_STEP_TASKS_PER_NODE", "2"),
			Config{Rank: 1, Size: 2, Addr: "gpu08", Port: 15000 + 123456%10000, LocalRank: 1, LocalSize: 2}},
		// A batch script (no step) is one process, whatever the job's tasks.
		{"sbatch script", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "7"}, Config{Size: 1, Addr: DefaultAddr}},
		{"mpirun, one machine", append(ompi, "MASTER_PORT", "2000"), Config{Rank: 1, Size: 2, Addr: DefaultAddr, Port: 2000, LocalRank: 1, LocalSize: 2}},
		// mpirun inside an allocation: SLURM_PROCID counts mpirun's daemons.
		{"mpirun under Slurm", append(append(ompi[:len(ompi):len(ompi)], srun...), "MASTER_PORT", "2000"),
			Config{Rank: 1, Size: 2, Addr: DefaultAddr, Port: 2000, LocalRank: 1, LocalSize: 2}},
		// torchrun inside an srun step: torchrun's variables win.
		{"torchrun under srun", append(srun[:len(srun):len(srun)], "RANK", "5", "WORLD_SIZE", "8", "MASTER_ADDR", "h", "MASTER_PORT", "29500", "LOCAL_RANK", "0"),
			Config{Rank: 5, Size: 8, Addr: "h", Port: 29500}},
	} {
		got, err := configFrom(envOf(c.env...))
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
	// Across machines Open MPI names no host: MASTER_ADDR must be passed.
	_, err := configFrom(envOf("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "MASTER_PORT", "1"))
	if err == nil || !strings.Contains(err.Error(), "-x MASTER_ADDR") {
		t.Errorf("mpirun over two machines without MASTER_ADDR: %v", err)
	}
	_, err = configFrom(envOf("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2"))
	if err == nil || !strings.Contains(err.Error(), "MASTER_PORT") {
		t.Errorf("mpirun without MASTER_PORT: %v", err)
	}
}

//go:build unix

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/task"
	"github.com/faster-training/faster/shard"
)

// schedVars are every variable a rank's or a task's place is read from
// (internal/task, collective.FromEnv, applyPET).
var schedVars = append(taskVars[:len(taskVars):len(taskVars)],
	"MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT",
	"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_STEP_NUM_TASKS",
	"SLURM_LOCALID", "SLURM_NODEID", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE",
	"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID",
	"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT", launchEnv, "FASTER_COLLECTIVE_TIMEOUT")

// setSchedEnv unsets every schedVars variable for the test (a variable set
// to "" still counts as set for the collective package) and sets kv.
func setSchedEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range schedVars {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	for i := 0; i < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// ddpTrain is a train command line that reaches the rendezvous.
func ddpTrain(t *testing.T, extra ...string) []string {
	return append([]string{"train", "--strategy", "ddp", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--filters", "4"}, extra...)
}

func init() {
	// Kubernetes' index 3 with a task count of 1 (before: the whole job ran).
	otherFixtures["task-index-outside-count"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t, "JOB_COMPLETION_INDEX", "3", task.CountEnv, "1")
		return []string{"pack", writeFolder(t, 2, 2), t.TempDir() + "/dst"}, "JOB_COMPLETION_INDEX=3 is not below FASTER_TASK_COUNT=1"
	}
	// srun's SLURM_NTASKS=2^40 (before: resize committed task 0 of 2^40).
	otherFixtures["task-count-env-huge"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t, "SLURM_PROCID", "0", "SLURM_NTASKS", "1099511627776")
		return []string{"resize", "--src", writeFolder(t, 2, 2), "--dst", t.TempDir() + "/dst", "--max-size", "4"}, "SLURM_NTASKS=1099511627776: want at most 100000 tasks"
	}
	// Two ranges of 65,537 hosts: refused unexpanded, as Slurm refuses a
	// range above 65,536 (before: 4.3e9 names expanded, out of memory).
	otherFixtures["hostlist-two-ranges"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t, "SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_ID", "1", "SLURM_STEP_NODELIST", "a[0-65536]b[0-65536]")
		return ddpTrain(t), `SLURM_STEP_NODELIST="a[0-65536]b[0-65536]"`
	}
	// A list naming 2^32 hosts, each range within Slurm's limit.
	otherFixtures["hostlist-too-many-hosts"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t, "SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_ID", "1", "SLURM_JOB_NODELIST", "a[0-65535]b[0-65535]")
		return ddpTrain(t), "names more than 1048576 hosts"
	}
	// Open MPI's rank named as Open MPI's (before: RANK="abc").
	otherFixtures["sched-var-named"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t, "OMPI_COMM_WORLD_RANK", "abc", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "MASTER_PORT", "1")
		return ddpTrain(t), `OMPI_COMM_WORLD_RANK="abc"`
	}
	// WORLD_SIZE=2^32+2 (before: Gloo's C int took it for 2).
	otherFixtures["world-size-huge"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t, "RANK", "0", "WORLD_SIZE", "4294967298", "MASTER_PORT", "1", "FASTER_COLLECTIVE_TIMEOUT", "1s")
		return ddpTrain(t), `WORLD_SIZE="4294967298": more than 1048576 ranks`
	}
	// --nnodes 2^62 × --nproc 4 (before: WORLD_SIZE="0" in each rank).
	otherFixtures["nnodes-nproc-overflow"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t)
		return ddpTrain(t, "--nproc", "4", "--nnodes", "4611686018427387904", "--master-addr", "h"), "--nnodes 4611686018427387904 × --nproc 4"
	}
	// --nproc 2^40 (before: out of memory sizing the launcher's channel).
	otherFixtures["nproc-huge"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t)
		return ddpTrain(t, "--nproc", "1099511627776"), "--nproc 1099511627776"
	}
	// The same from Kubeflow's PET_NPROC_PER_NODE, named as it.
	otherFixtures["pet-nproc-huge"] = func(t *testing.T) ([]string, string) {
		setSchedEnv(t, "PET_NPROC_PER_NODE", "1099511627776")
		return ddpTrain(t), `PET_NPROC_PER_NODE="1099511627776"`
	}
}

// The task package's bound is shard's: a task count read is one pack
// accepts.
func TestTaskMaxCountIsShards(t *testing.T) {
	if task.MaxCount != shard.MaxTasks {
		t.Errorf("task.MaxCount %d, shard.MaxTasks %d", task.MaxCount, shard.MaxTasks)
	}
}

// Launcher values from Kubeflow's variables are bounded and named as the
// variable read, never as the flag they stand for (before: PET_NNODES=2^62
// with PET_NPROC_PER_NODE=4 launched ranks with WORLD_SIZE=0; a
// PET_MASTER_PORT of 70000 was "--master-port 70000"; RANK=5 of
// PET_NNODES=2 was "--node-rank 5").
func TestApplyPETBoundsAndNames(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"PET_NPROC_PER_NODE", "1099511627776"}, nil, `PET_NPROC_PER_NODE="1099511627776"`},
		{[]string{"PET_NNODES", "4611686018427387904", "PET_NPROC_PER_NODE", "4"}, nil, `PET_NNODES="4611686018427387904"`},
		{[]string{"PET_NNODES", "65536", "PET_NPROC_PER_NODE", "65536"}, nil, `PET_NNODES="65536"`},
		{[]string{"PET_NNODES", "1024"}, []string{"--nproc", "65536"}, `PET_NNODES="1024"`},
		{[]string{"PET_NNODES", "2", "RANK", "5"}, nil, `RANK="5"`},
		{[]string{"PET_NNODES", "2", "PET_NODE_RANK", "2"}, nil, `PET_NODE_RANK="2"`},
		{[]string{"PET_NNODES", "2", "PET_MASTER_PORT", "70000"}, nil, `PET_MASTER_PORT="70000"`},
		{[]string{"PET_NNODES", "2", "MASTER_PORT", "0"}, nil, `MASTER_PORT="0"`},
		{[]string{"PET_NNODES", "0"}, nil, `PET_NNODES="0"`},
	} {
		o := trainOptions{cfg: fit.Config{Parallel: fit.ParallelConfig{Strategy: "ddp"}}}
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		addParallelFlags(f, &o)
		if err := f.Parse(append([]string{"--strategy", "ddp"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		err := applyPET(f, &o, env(c.env...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v, want an error naming %s", c.env, c.args, err, c.want)
		}
	}
}

// A long bad launcher variable is quoted cut short (before: a 1 MB
// PET_NNODES was printed whole).
func TestApplyPETQuotesLongValuesShort(t *testing.T) {
	o := trainOptions{cfg: fit.Config{Parallel: fit.ParallelConfig{Strategy: "ddp"}}}
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addParallelFlags(f, &o)
	f.Parse([]string{"--strategy", "ddp"})
	long := strings.Repeat("9", 1<<20)
	err := applyPET(f, &o, func(k string) (string, bool) {
		if k == "PET_NNODES" {
			return long, true
		}
		return "", false
	})
	if err == nil || !strings.Contains(err.Error(), `PET_NNODES="999`) || len(err.Error()) > 1000 {
		t.Errorf("a 1 MB PET_NNODES: %d bytes of error, want under 1000 naming PET_NNODES", len(fmt.Sprint(err)))
	}
}

package slurmtest

import (
	"strings"
	"testing"
)

// The cluster runs a job: srun -n 2 starts two tasks on the node.
func TestStartRunsJob(t *testing.T) {
	c := Start(t)
	out, err := c.Command("srun", "-n", "2", "sh", "-c", "echo task $SLURM_PROCID of $SLURM_NTASKS").CombinedOutput()
	if err != nil {
		t.Fatalf("srun: %v\n%s", err, out)
	}
	for _, w := range []string{"task 0 of 2", "task 1 of 2"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("srun output lacks %q:\n%s", w, out)
		}
	}
}

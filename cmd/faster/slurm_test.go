package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/slurmtest"

	"github.com/faster-training/faster/internal/testenv"
)

// sbatchWait runs sbatch --wait with args on the cluster, the test binary
// standing in for faster (TestMain); it returns the job id and sbatch's
// error (a failed task makes it exit non-zero).
func sbatchWait(t *testing.T, c *slurmtest.Cluster, args ...string) (string, []byte, error) {
	t.Helper()
	cmd := c.Command("sbatch", append([]string{"--wait"}, args...)...)
	cmd.Env = append(cmd.Env, cliEnv+"=1", "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("sbatch %v: %v\n%s\n%s", args, err, out, c.Logs())
	}
	return string(m[1]), out, err
}

// The docs' Slurm recipe on a real one-host cluster (slurmctld, slurmd,
// munged): a job array `sbatch --array=0-2` packs real photographs, task i
// from SLURM_ARRAY_TASK_ID; array task 1 is killed before its pack starts
// (its script SIGKILLs itself), so the array fails and `faster pack --merge`
// names task 1 and only it; `sbatch --wrap 'faster pack … --task 1/3'`
// reruns it, and the merge then equals a one-machine pack byte for byte.
func TestPackSlurmJobArray(t *testing.T) {
	src := realPhotoTree(t)
	setTaskEnv(t)
	c := slurmtest.Start(t)
	tmp := t.TempDir()
	ref := filepath.Join(tmp, "ref")
	if code, _, errs := runCLI(t, "pack", src, ref, "--shards", "7"); code != 0 {
		t.Fatal(errs)
	}
	dst := filepath.Join(tmp, "slurm")
	pack := "'" + os.Args[0] + "' pack '" + src + "' '" + dst + "' --shards 7"
	logs := filepath.Join(tmp, "job-%A_%a.out")
	script := `if [ "$SLURM_ARRAY_TASK_ID" = 1 ]; then kill -KILL $$; fi; exec ` + pack
	job, out, err := sbatchWait(t, c, "--array=0-2", "--output", logs, "--wrap", script)
	if err == nil {
		t.Fatalf("the array with task 1 killed succeeded:\n%s", out)
	}
	// No slurmdbd: slurmctld still holds the finished array's tasks.
	show, _ := c.Command("scontrol", "show", "job", job).CombinedOutput()
	for id, want := range map[string]string{"0": "COMPLETED", "1": "FAILED", "2": "COMPLETED"} {
		m := regexp.MustCompile(`ArrayTaskId=` + id + `\s[\s\S]*?JobState=(\S+)`).FindSubmatch(show)
		if m == nil {
			t.Errorf("array task %s: no state", id)
		} else if string(m[1]) != want {
			t.Errorf("array task %s: state %s, want %s", id, m[1], want)
		}
	}
	if t.Failed() {
		joblogs, _ := filepath.Glob(filepath.Join(tmp, "job-*.out"))
		for _, l := range joblogs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
		t.Fatalf("scontrol show job %s:\n%s", job, show)
	}
	code, _, errs := runCLI(t, "pack", "--merge", dst)
	if code != 1 || !strings.Contains(errs, "1 of 3 tasks not done; missing (never started): 1;") {
		t.Fatalf("merge with array task 1 killed: exit %d: %s", code, errs)
	}
	if _, out, err := sbatchWait(t, c, "--output", filepath.Join(tmp, "rerun-%j.out"), "--wrap", "exec "+pack+" --task 1/3"); err != nil {
		b, _ := os.ReadFile(filepath.Join(tmp, "rerun-"+regexp.MustCompile(`\d+`).FindString(string(out))+".out"))
		t.Fatalf("rerun of task 1: %v\n%s\n%s", err, out, b)
	}
	if code, out, errs := runCLI(t, "pack", "--merge", dst); code != 0 || !strings.Contains(out, "merged 3 tasks") {
		t.Fatalf("merge: exit %d: %s%s", code, out, errs)
	}
	sameTree(t, "slurm job array", ref, dst)
}

// `srun -n 2 faster train --strategy ddp` on the cluster: the ranks from
// srun's variables, MASTER_ADDR the step's node, the port derived from the
// job id; the weights equal `--nproc 2`'s bit for bit.
func TestTrainUnderSrun(t *testing.T) {
	needGloo(t)
	if raceEnabled {
		t.Skip("slow under -race; make accuracy runs it")
	}
	const fm = testenv.FashionMNISTDir
	if _, err := os.Stat(filepath.Join(fm, "train-images-idx3-ubyte.gz")); err != nil {
		testenv.Missing(t, "Fashion-MNIST missing")
	}
	c := slurmtest.Start(t)
	tmp := t.TempDir()
	sub := filepath.Join(tmp, "fashion-subset")
	os.MkdirAll(sub, 0o755)
	writeIDXSubset(t, fm, sub, "train", 128)
	writeIDXSubset(t, fm, sub, "t10k", 64)
	train := func(ckpt string) []string {
		return []string{"train", "--strategy", "ddp", "--data", sub, "--batch", "32",
			"--epochs", "1", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt}
	}
	ours := filepath.Join(tmp, "ours.ckpt")
	if code, _, errs := runCLI(t, append(train(ours), "--nproc", "2")...); code != 0 {
		t.Fatalf("faster train --nproc 2: exit %d\n%s", code, errs)
	}
	ckpt := filepath.Join(tmp, "srun.ckpt")
	cmd := c.Command("srun", append([]string{"-n", "2", os.Args[0]}, train(ckpt)...)...)
	// The test binary stands in for faster (TestMain); MASTER_ADDR and MASTER_PORT not given.
	cmd.Env = append(cmd.Env, launchEnv+"=1", "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("srun -n 2: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ddp rank 0 of 2") {
		t.Errorf("srun: rank 0 did not report a group of 2:\n%s", out)
	}
	sameWeights(t, ours, ckpt, "srun -n 2: tensor %d differs from --nproc 2's run")
}

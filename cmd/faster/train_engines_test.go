package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// Open MPI's mpirun starts two ranks of `faster train --strategy ddp`
// (ranks from OMPI_COMM_WORLD_*, MASTER_ADDR 127.0.0.1 since both ranks are
// on this machine, MASTER_PORT passed in the environment, which mpirun
// forwards to local ranks); they train the weights of `--nproc 2`, bit for
// bit.
func TestTrainUnderMpirun(t *testing.T) {
	needGloo(t)
	if raceEnabled {
		t.Skip("slow under -race; make accuracy runs it")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		testenv.MissingInterop(t, "mpirun missing (openmpi-bin)")
	}
	const fm = testenv.FashionMNISTDir
	if _, err := os.Stat(filepath.Join(fm, "train-images-idx3-ubyte.gz")); err != nil {
		testenv.Missing(t, "Fashion-MNIST missing")
	}
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
	want := checkpointWeights(t, ours, 4, 8)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(tmp, "mpirun.ckpt")
	c := exec.Command(mpirun, append([]string{"--allow-run-as-root", "--oversubscribe", "-np", "2", os.Args[0]}, train(ckpt)...)...)
	// The test binary stands in for faster (TestMain).
	c.Env = append(os.Environ(), launchEnv+"=1", "OMP_NUM_THREADS=1", "MASTER_PORT="+strconv.Itoa(port))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun -np 2: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ddp rank 0 of 2") {
		t.Errorf("mpirun: rank 0 did not report a group of 2:\n%s", out)
	}
	got := checkpointWeights(t, ckpt, 4, 8)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("mpirun: tensor %d differs from --nproc 2's run", i)
		}
	}
}

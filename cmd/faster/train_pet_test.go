package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/fit"
)

func TestApplyPET(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	// A PyTorchJob v1 worker pod: RANK counts pods.
	pod := []string{"PET_NNODES", "2", "PET_NPROC_PER_NODE", "2", "RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "master-0", "MASTER_PORT", "23456"}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want nodeOptions
		np   int
	}{
		{"pod", pod, nil, nodeOptions{nnodes: 2, nodeRank: 1, masterAddr: "master-0", masterPort: 23456}, 2},
		{"PET_ wins", append(pod, "PET_NODE_RANK", "0", "PET_MASTER_ADDR", "a", "PET_MASTER_PORT", "1"), nil, nodeOptions{nnodes: 2, masterAddr: "a", masterPort: 1}, 2},
		{"flags win", pod, []string{"--nproc", "3", "--node-rank", "0", "--master-addr", "b"}, nodeOptions{nnodes: 2, masterAddr: "b", masterPort: 23456}, 3},
		{"N:N", []string{"PET_NNODES", "1:1"}, nil, nodeOptions{nnodes: 1}, 1},
		{"torchrun's RANK without PET_NNODES", []string{"RANK", "1", "MASTER_ADDR", "m"}, nil, nodeOptions{nnodes: 1}, 0},
	} {
		o := trainOptions{cfg: fit.Config{Parallel: fit.ParallelConfig{Strategy: "ddp"}}}
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		addParallelFlags(f, &o)
		if err := f.Parse(append([]string{"--strategy", "ddp"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		if err := applyPET(f, &o, env(c.env...)); err != nil || o.nodes != c.want || o.nproc != c.np {
			t.Errorf("%s: %+v nproc %d %v, want %+v nproc %d", c.name, o.nodes, o.nproc, err, c.want, c.np)
		}
	}
	o := trainOptions{cfg: fit.Config{Parallel: fit.ParallelConfig{Strategy: "ddp"}}}
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addParallelFlags(f, &o)
	f.Parse([]string{"--strategy", "ddp"})
	if err := applyPET(f, &o, env("PET_NNODES", "1:4")); err == nil {
		t.Error("an elastic PET_NNODES range: no error")
	}
}

// Two PyTorchJob-like "pods" (RANK and WORLD_SIZE count pods,
// PET_NNODES=2, PET_NPROC_PER_NODE=1, the master pod's MASTER_ADDR and
// MASTER_PORT) each run `faster train --strategy ddp` without a launcher
// flag: their launchers give the processes their ranks, which train the
// weights of `--nproc 2`, bit for bit.
func TestTrainPyTorchJobPods(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 256)
	tmp := t.TempDir()
	train := func(ckpt string, extra ...string) []string {
		return append([]string{"train", "--strategy", "ddp", "--data", dir, "--limit", "128", "--test-limit", "64", "--batch", "32",
			"--epochs", "1", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt}, extra...)
	}
	one := filepath.Join(tmp, "one.ckpt")
	if code, _, errs := runCLI(t, train(one, "--nproc", "2")...); code != 0 {
		t.Fatalf("--nproc 2: exit %d\n%s", code, errs)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(tmp, "pods.ckpt")
	errs := make(chan error, 2)
	for pod := range 2 {
		go func() {
			c := exec.Command(os.Args[0], train(two)...)
			c.Env = append(os.Environ(), cliEnv+"=1", "PET_NNODES=2", "PET_NPROC_PER_NODE=1", "RANK="+strconv.Itoa(pod), "WORLD_SIZE=2",
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
			out, err := c.CombinedOutput()
			if err != nil {
				err = &failError{"pod " + strconv.Itoa(pod) + ": " + err.Error() + "\n" + string(out)}
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sameWeights(t, one, two, "tensor %d differs between --nproc 2 and two pods of one process")
}

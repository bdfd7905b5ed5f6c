//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/train"
)

// TestTrainSIGHUP: SIGHUP (a closed terminal, a dropped SSH session) ends
// train as SIGINT and SIGTERM do: the run stops cleanly, its checkpoint
// saved, exit 130 (before: the process was killed by the signal, and a
// checkpoint was saved only at the epochs' ends). The signal is sent once
// the first epoch's line is out: the handlers are installed and training
// goes on, whatever the machine's speed.
func TestTrainSIGHUP(t *testing.T) {
	dir := writeTrainIDX(t, 32)
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	c := exec.Command(os.Args[0], "train", "--data", dir, "--batch", "4", "--threads", "1", "--filters", "4",
		"--test-limit", "4", "--epochs", "1000000", "--checkpoint", ckpt)
	c.Env = append(os.Environ(), cliEnv+"=1")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill() // a run the signal did not end
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "epoch 1/") {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("no first epoch line: %q\n%s", sc.Text(), stderr.String())
	}
	if err := c.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // the epochs that end before the signal is handled
	}
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "faster: interrupted") {
		t.Fatalf("after SIGHUP: %v (exit %d), want exit 130 'interrupted'\n%s", err, ee.ExitCode(), stderr.String())
	}
	epoch, step, err := train.CheckpointPosition(ckpt)
	if err != nil || epoch < 1 && step == 0 {
		t.Fatalf("checkpoint after SIGHUP: epoch %d step %d, %v\n%s", epoch, step, err, stderr.String())
	}
	t.Logf("stopped at epoch %d step %d: %s", epoch, step, stderr.String())
}

//go:build cgo && !faster_serveonly

package gloo

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/collective"
)

// TestRankTwice: two processes started with one RANK join a rendezvous.
// The one that comes second is refused at once, its error naming the rank
// and that it joined twice; the group the other one joined goes on and
// all-reduces (before: the duplicate broke the rendezvous, and the ranks
// failed only after several timeouts, reporting "lost rank 0"). The
// timeout is long: the verdict is in the errors, not in how long they
// took.
func TestRankTwice(t *testing.T) {
	const timeout = 20 * time.Second
	port := freePort(t)
	dir := t.TempDir()
	type child struct {
		cmd    *exec.Cmd
		out    string
		stderr bytes.Buffer
	}
	var kids []*child
	for i := range 2 {
		k := &child{out: filepath.Join(dir, "rank1-"+strconv.Itoa(i)+".json")}
		k.cmd = exec.Command(os.Args[0], "-test.run=^$")
		k.cmd.Env = append(os.Environ(), childEnv+"=allreduce", outEnv+"="+k.out, itersEnv+"=0",
			"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port),
			"FASTER_COLLECTIVE_TIMEOUT="+timeout.String())
		k.cmd.Stderr = &k.stderr
		if err := k.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if k.cmd.ProcessState == nil {
				k.cmd.Process.Kill()
				k.cmd.Wait()
			}
		})
		kids = append(kids, k)
	}
	c, err := Open(collective.Config{Rank: 0, Size: 2, Addr: "127.0.0.1", Port: port, Timeout: timeout})
	if err != nil {
		t.Fatalf("rank 0: %v\n%s\n%s", err, kids[0].stderr.String(), kids[1].stderr.String())
	}
	digests, err := allReduceScenario(c, 0)
	if err != nil {
		t.Fatalf("rank 0: %v", err)
	}
	c.Close()
	ok, refused := 0, 0
	for _, k := range kids {
		err := k.cmd.Wait()
		msg := k.stderr.String()
		if err == nil {
			b, _ := os.ReadFile(k.out)
			var d []string
			if json.Unmarshal(b, &d) != nil || !slices.Equal(d, digests) {
				t.Errorf("the rank 1 that joined: digests %s, rank 0's %v", b, digests)
			}
			ok++
			continue
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(msg, "rank 1 joined this rendezvous twice") || strings.Contains(msg, "Timed out") {
			t.Errorf("the second rank 1: %v, want refused as joining twice:\n%s", err, msg)
		}
		refused++
	}
	if ok != 1 || refused != 1 {
		t.Errorf("%d rank 1 joined, %d refused; want one each", ok, refused)
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/storage/s3test"
)

// cliEnv makes the test binary run as the faster CLI (TestMain).
const cliEnv = "FASTER_TEST_AS_CLI"

// machines are network namespaces joined by a link: "machines" with
// their own loopback and addresses 10.211.0.1, 10.211.0.2, …, whose
// traffic crosses a real (virtual) network link. Two are joined by one
// veth pair; three or more each by a veth pair to a bridge in a further
// namespace (the switch), so that every machine reaches every other. The
// links live inside the namespaces only: nothing of the host's network
// changes.
type machines struct {
	t     *testing.T
	ns    []string
	addrs []string
	veth  []string // machine i's end of its link
	sw    string   // the switch's namespace, for three or more
}

// newMachines makes two machines (newNetwork).
func newMachines(t *testing.T) *machines { return newNetwork(t, 2) }

// newNetwork makes n machines, or skips where the kernel or the
// privileges do not allow it (and fails instead under
// FASTER_REQUIRE_DATA=1).
func newNetwork(t *testing.T, n int) *machines {
	t.Helper()
	needGloo(t)
	skip := func(why string) {
		t.Helper()
		testenv.Missing(t, "network namespaces: %s", why)
	}
	if os.Geteuid() != 0 {
		skip("not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skip("no ip (iproute2)")
	}
	id := strconv.Itoa(os.Getpid())
	m := &machines{t: t}
	for i := range n {
		c := string(rune('a' + i))
		m.ns = append(m.ns, "faster-"+id+"-"+c)
		m.addrs = append(m.addrs, fmt.Sprintf("10.211.0.%d", i+1))
		m.veth = append(m.veth, "fv"+id+c) // at most 15 bytes
	}
	t.Cleanup(m.remove)
	var cmds [][]string
	for i := range n {
		cmds = append(cmds, []string{"netns", "add", m.ns[i]})
	}
	if n == 2 {
		cmds = append(cmds, []string{"-n", m.ns[0], "link", "add", m.veth[0], "type", "veth", "peer", "name", m.veth[1], "netns", m.ns[1]})
	} else {
		m.sw = "faster-" + id + "-switch"
		br := "fb" + id
		cmds = append(cmds, []string{"netns", "add", m.sw},
			[]string{"-n", m.sw, "link", "add", br, "type", "bridge"},
			[]string{"-n", m.sw, "link", "set", br, "up"})
		for i := range n {
			port := "fs" + id + string(rune('a'+i))
			cmds = append(cmds, []string{"-n", m.ns[i], "link", "add", m.veth[i], "type", "veth", "peer", "name", port, "netns", m.sw},
				[]string{"-n", m.sw, "link", "set", port, "master", br},
				[]string{"-n", m.sw, "link", "set", port, "up"})
		}
	}
	for i := range n {
		cmds = append(cmds, []string{"-n", m.ns[i], "addr", "add", m.addrs[i] + "/24", "dev", m.veth[i]},
			[]string{"-n", m.ns[i], "link", "set", m.veth[i], "up"},
			[]string{"-n", m.ns[i], "link", "set", "lo", "up"})
	}
	for _, args := range cmds {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			skip(fmt.Sprintf("ip %s: %v: %s", strings.Join(args, " "), err, out))
		}
	}
	return m
}

// kill SIGKILLs every process of machine i: the machine dies.
func (m *machines) kill(i int) {
	out, _ := exec.Command("ip", "netns", "pids", m.ns[i]).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (m *machines) remove() {
	for i := range m.ns {
		m.kill(i)
		exec.Command("ip", "netns", "del", m.ns[i]).Run()
	}
	if m.sw != "" {
		exec.Command("ip", "netns", "del", m.sw).Run()
	}
}

// start runs the test binary as `faster args…` on machine i.
func (m *machines) start(i int, stderr *bytes.Buffer, args ...string) *exec.Cmd {
	m.t.Helper()
	return m.startEnv(i, nil, stderr, args...)
}

// startEnv is start with env added to the environment.
func (m *machines) startEnv(i int, env []string, stderr *bytes.Buffer, args ...string) *exec.Cmd {
	m.t.Helper()
	c := exec.Command("ip", append([]string{"netns", "exec", m.ns[i], os.Args[0]}, args...)...)
	c.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	c.Stderr = stderr
	if err := c.Start(); err != nil {
		m.t.Fatal(err)
	}
	return c
}

// nodeArgs are the launcher flags of machine i of two, one rank each,
// node 0 serving the store.
func (m *machines) nodeArgs(i int) []string {
	return []string{"--nproc", "1", "--nnodes", "2", "--node-rank", strconv.Itoa(i), "--master-addr", m.addrs[0], "--master-port", "29500"}
}

// twoRankArgs is the small DDP run the two-machine tests compare.
func twoRankArgs(dir, ckpt string) []string {
	return []string{"train", "--strategy", "ddp", "--data", dir, "--limit", "128", "--test-limit", "64", "--batch", "32",
		"--epochs", "1", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt}
}

// oneMachineRun trains twoRankArgs with two ranks on this machine and
// returns its checkpoint: the weights the two-machine runs must match.
func oneMachineRun(t *testing.T, dir, tmp string) string {
	t.Helper()
	one := filepath.Join(tmp, "one.ckpt")
	if code, _, errs := runCLI(t, append(twoRankArgs(dir, one), "--nproc", "2")...); code != 0 {
		t.Fatalf("--nproc 2: exit %d\n%s", code, errs)
	}
	return one
}

// Two machines of one rank each, over the veth link, train the weights of
// two ranks on one machine, bit for bit.
func TestTrainTwoMachines(t *testing.T) {
	m := newMachines(t)
	dir := writeTrainIDX(t, 256)
	tmp := t.TempDir()
	train := func(ckpt string) []string { return twoRankArgs(dir, ckpt) }
	one := oneMachineRun(t, dir, tmp)
	two := filepath.Join(tmp, "two.ckpt")
	var errs [2]bytes.Buffer
	var nodes [2]*exec.Cmd
	for i := range 2 {
		nodes[i] = m.start(i, &errs[i], append(train(two), m.nodeArgs(i)...)...)
	}
	for i, c := range nodes {
		if err := c.Wait(); err != nil {
			t.Fatalf("machine %d: %v\n%s", i, err, errs[i].String())
		}
	}
	sameWeights(t, one, two, "tensor %d differs between two machines and one")
}

// A machine that dies (every process SIGKILLed) makes the other fail
// with an error naming the lost rank, as soon as the kernel resets the
// connections, not after the collective timeout.
func TestTrainMachineDies(t *testing.T) {
	m := newMachines(t)
	dir := writeTrainIDX(t, 1024)
	ckpt := filepath.Join(t.TempDir(), "w.ckpt")
	const timeout = 60 * time.Second
	args := []string{"train", "--strategy", "ddp", "--data", dir, "--limit", "256", "--test-limit", "32", "--batch", "32",
		"--epochs", "1000", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt,
		"--collective-timeout", timeout.String()}
	var errs [2]bytes.Buffer
	n0 := m.start(0, &errs[0], append(args, m.nodeArgs(0)...)...)
	n1 := m.start(1, &errs[1], append(args, m.nodeArgs(1)...)...)
	done := make(chan error, 1)
	go func() { done <- n0.Wait() }()
	// Kill machine 1 once both train: rank 0 saved its first epoch.
	for {
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("machine 0 ended before the kill: %v\n%s", err, errs[0].String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	killed := time.Now()
	m.kill(1)
	n1.Wait()
	select {
	case err := <-done:
		took := time.Since(killed)
		msg := errs[0].String()
		t.Logf("machine 0 exited %v after machine 1 died: %v\n%s", took.Round(time.Millisecond), err, strings.TrimSpace(msg))
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("machine 0: %v, want exit status 1", err)
		}
		if !strings.Contains(msg, "lost rank 1") {
			t.Errorf("machine 0's error does not name the lost rank: %s", msg)
		}
		// The reset connection, not the timeout, ended it: the error is a
		// lost peer's, not an expired wait's (a property the machine's load
		// cannot change; the time above is only logged).
		if low := strings.ToLower(msg); strings.Contains(low, "timed out") || strings.Contains(low, "timeout") {
			t.Errorf("machine 0 failed by the collective timeout, not by the lost connection: %s", msg)
		}
	case <-time.After(timeout + 30*time.Second):
		t.Fatalf("machine 0 still running %v after machine 1 died\n%s", timeout+30*time.Second, errs[0].String())
	}
}

// A cut link (the veth taken down: no reset, packets just stop) fails the
// ranks after the collective timeout, not never.
func TestTrainLinkCut(t *testing.T) {
	m := newMachines(t)
	dir := writeTrainIDX(t, 1024)
	ckpt := filepath.Join(t.TempDir(), "w.ckpt")
	const timeout = 3 * time.Second
	args := []string{"train", "--strategy", "ddp", "--data", dir, "--limit", "256", "--test-limit", "32", "--batch", "32",
		"--epochs", "1000", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt,
		"--collective-timeout", timeout.String()}
	var errs [2]bytes.Buffer
	var done [2]chan error
	for i := range 2 {
		c := m.start(i, &errs[i], append(args, m.nodeArgs(i)...)...)
		done[i] = make(chan error, 1)
		go func() { done[i] <- c.Wait() }()
	}
	for {
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		select {
		case err := <-done[0]:
			t.Fatalf("machine 0 ended before the cut: %v\n%s", err, errs[0].String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if out, err := exec.Command("ip", "-n", m.ns[0], "link", "set", m.veth[0], "down").CombinedOutput(); err != nil {
		t.Fatalf("link down: %v: %s", err, out)
	}
	for i := range 2 {
		select {
		case err := <-done[i]:
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Errorf("machine %d: %v, want exit status 1\n%s", i, err, errs[i].String())
			}
			// No reset reaches a cut link: the collective timeout ends it.
			if !strings.Contains(strings.ToLower(errs[i].String()), "timed out") {
				t.Errorf("machine %d: want a collective timeout: %s", i, errs[i].String())
			}
			t.Logf("machine %d: %s", i, strings.TrimSpace(errs[i].String()))
		case <-time.After(timeout + 60*time.Second): // a hang guard
			t.Fatalf("machine %d still running long after the link was cut\n%s", i, errs[i].String())
		}
	}
}

// A run that loses a machine resumes from its checkpoint, on both
// machines again, to the weights of a run that was never interrupted.
func TestTrainTwoMachinesResume(t *testing.T) {
	if raceEnabled {
		t.Skip("four runs of two race-built ranks are slow; make accuracy runs it")
	}
	m := newMachines(t)
	dir := writeTrainIDX(t, 256)
	tmp := t.TempDir()
	train := func(ckpt string) []string {
		return []string{"train", "--strategy", "ddp", "--data", dir, "--limit", "128", "--test-limit", "32", "--batch", "32",
			"--epochs", "3", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt}
	}
	both := func(ckpt string) [2]error {
		var errs [2]bytes.Buffer
		var nodes [2]*exec.Cmd
		for i := range 2 {
			nodes[i] = m.start(i, &errs[i], append(train(ckpt), m.nodeArgs(i)...)...)
		}
		var res [2]error
		for i, c := range nodes {
			if res[i] = c.Wait(); res[i] != nil {
				res[i] = fmt.Errorf("%w: %s", res[i], errs[i].String())
			}
		}
		return res
	}
	whole := filepath.Join(tmp, "whole.ckpt")
	if res := both(whole); res[0] != nil || res[1] != nil {
		t.Fatalf("uninterrupted run: %v", res)
	}
	// Interrupted: machine 1 dies once the first epoch is saved (or later:
	// whenever it is, the rerun must end at the same weights).
	cut := filepath.Join(tmp, "cut.ckpt")
	var errs [2]bytes.Buffer
	n0 := m.start(0, &errs[0], append(train(cut), m.nodeArgs(0)...)...)
	n1 := m.start(1, &errs[1], append(train(cut), m.nodeArgs(1)...)...)
	done := make(chan error, 1)
	go func() { done <- n0.Wait() }()
	var err0 error
wait:
	for {
		if _, err := os.Stat(cut); err == nil {
			m.kill(1)
			err0 = <-done
			break
		}
		select {
		case err0 = <-done:
			break wait
		case <-time.After(5 * time.Millisecond):
		}
	}
	m.kill(1)
	n1.Wait()
	t.Logf("machine 0 after machine 1 died: %v (nil: it had finished)\n%s", err0, strings.TrimSpace(errs[0].String()))
	if res := both(cut); res[0] != nil || res[1] != nil {
		t.Fatalf("rerun from the checkpoint: %v", res)
	}
	sameWeights(t, whole, cut, "tensor %d: the resumed run differs from the uninterrupted one\n%s", errs[0].String())
}

// torchrun across two machines (static rendezvous: node 0's agent serves
// the store the agents and the ranks meet at) trains the weights of two
// ranks on one machine, bit for bit.
func TestTorchrunTwoMachines(t *testing.T) {
	const torchrun = testenv.Torchrun
	if _, err := os.Stat(torchrun); err != nil {
		testenv.MissingInterop(t, "torchrun missing (python3-torch)")
	}
	if raceEnabled {
		t.Skip("slow under -race; make accuracy runs it")
	}
	m := newMachines(t)
	dir := writeTrainIDX(t, 256)
	tmp := t.TempDir()
	train := func(ckpt string) []string { return twoRankArgs(dir, ckpt) }
	one := oneMachineRun(t, dir, tmp)
	two := filepath.Join(tmp, "two.ckpt")
	var outs [2]bytes.Buffer
	var nodes [2]*exec.Cmd
	for i := range 2 {
		args := []string{"netns", "exec", m.ns[i], torchrun, "--nnodes", "2", "--nproc_per_node", "1", "--node_rank", strconv.Itoa(i),
			"--master_addr", m.addrs[0], "--master_port", "29500", "--no_python", "--redirects", "1", "--tee", "1", os.Args[0]}
		c := exec.Command("ip", append(args, train(two)...)...)
		c.Env = append(os.Environ(), launchEnv+"=1", "OMP_NUM_THREADS=1") // the test binary stands in for faster
		c.Stdout, c.Stderr = &outs[i], &outs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		nodes[i] = c
	}
	for i, c := range nodes {
		if err := c.Wait(); err != nil {
			t.Fatalf("torchrun on machine %d: %v\n%s", i, err, outs[i].String())
		}
	}
	sameWeights(t, one, two, "tensor %d differs between torchrun on two machines and our launcher on one")
}

// Three machines: the third serves packed TFRecord shards from a real S3
// server (versitygw), the other two train on them with one rank each,
// reading s3:// over the network, to the weights of two ranks on one
// machine reading the local copy of the shards, bit for bit; and each
// training machine fetched its own train shards from the server.
func TestTrainTwoMachinesFromS3(t *testing.T) {
	m := newNetwork(t, 3)
	const port = "7070"
	srv, err := s3test.StartIn([]string{"ip", "netns", "exec", m.ns[2]}, m.addrs[2]+":"+port)
	if err != nil {
		testenv.Missing(t, "S3 test server unavailable: %v", err)
	}
	t.Cleanup(srv.Close)
	s3test.SetEnv() // the nodes' credentials; their endpoint is added below
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, s3test.Bucket); err != nil {
		t.Fatal(err)
	}
	packed := filepath.Join(t.TempDir(), "packed")
	idx := writeTrainIDX(t, 128)
	for _, split := range []string{"train", "test"} {
		if code, _, errs := runCLI(t, "pack", idx, packed, "--split", split, "--shards", "4"); code != 0 {
			t.Fatalf("pack --split %s: %s", split, errs)
		}
	}
	ents, err := os.ReadDir(packed)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(packed, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Put(ctx, s3test.Bucket, "fm/"+e.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
	train := func(data, ckpt string) []string {
		return []string{"train", "--strategy", "ddp", "--data", data, "--batch", "32", "--epochs", "1", "--backend", "reference",
			"--filters", "4,8", "--threads", "1", "--checkpoint", ckpt}
	}
	tmp := t.TempDir()
	one := filepath.Join(tmp, "one.ckpt")
	if code, _, errs := runCLI(t, append(train(packed, one), "--nproc", "2")...); code != 0 {
		t.Fatalf("--nproc 2 on the local shards: exit %d\n%s", code, errs)
	}
	// As a user would: the bucket's URL, the endpoint in the environment.
	env := []string{"AWS_ENDPOINT_URL_S3=http://" + m.addrs[2] + ":" + port}
	two := filepath.Join(tmp, "two.ckpt")
	var errs [2]bytes.Buffer
	var nodes [2]*exec.Cmd
	for i := range 2 {
		nodes[i] = m.startEnv(i, env, &errs[i], append(train("s3://"+s3test.Bucket+"/fm", two), m.nodeArgs(i)...)...)
	}
	for i, c := range nodes {
		if err := c.Wait(); err != nil {
			t.Fatalf("machine %d: %v\n%s", i, err, errs[i].String())
		}
	}
	sameWeightsIn(t, 3, one, two, "tensor %d differs between two machines reading S3 and one machine reading the local shards")
	// The server's access log: which machine fetched which train shard.
	reqs, err := srv.Requests()
	if err != nil {
		t.Fatal(err)
	}
	shards := map[string]map[string]int{} // address → train shard → GETs
	for _, r := range reqs {
		if r.Operation == "s3_GetObject" && r.Status/100 == 2 && strings.HasPrefix(r.Key, "fm/train") && strings.HasSuffix(r.Key, ".tfrecord") {
			if shards[r.Remote] == nil {
				shards[r.Remote] = map[string]int{}
			}
			shards[r.Remote][r.Key]++
		}
	}
	t.Logf("train shards fetched, by address: %v", shards)
	for i := range 2 {
		if len(shards[m.addrs[i]]) == 0 {
			t.Errorf("machine %d (%s) fetched no train shard from the server: %v", i, m.addrs[i], shards)
		}
		for k := range shards[m.addrs[i]] {
			if _, both := shards[m.addrs[1-i]][k]; both {
				t.Errorf("both machines fetched %s: each rank should read only its own shards", k)
			}
		}
	}
}

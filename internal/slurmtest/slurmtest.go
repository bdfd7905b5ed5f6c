// Package slurmtest starts a one-host Slurm cluster for a test: munged with
// a generated key, slurmctld and slurmd in the foreground as the test's
// child processes, all their state, spool, logs and sockets in a temporary
// directory, on free ports. It needs root (SlurmUser=root) and Debian's
// slurm-wlm and munge (scripts/setup.sh installs them).
package slurmtest

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a running one-host cluster.
type Cluster struct {
	Dir  string // its state, spool, logs and slurm.conf
	Conf string // slurm.conf's path
	Node string // the one node's name
}

// Env is the environment for the Slurm clients (srun, sbatch, scontrol):
// the process's own with SLURM_CONF pointing at the cluster's.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf)
}

// Command is name with args, run with Env.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	return cmd
}

// Logs is the daemons' logs, for a failure message.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, f := range []string{"munged.log", "slurmctld.log", "slurmd.log"} {
		out, _ := os.ReadFile(filepath.Join(c.Dir, f))
		fmt.Fprintf(&b, "==> %s <==\n%s\n", f, out)
	}
	return b.String()
}

func requireOrSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("FASTER_REQUIRE_INTEROP") != "" {
		t.Fatalf(format+" (run scripts/setup.sh)", args...)
	}
	t.Skipf(format, args...)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts the cluster and stops it (kill, wait) when the test ends,
// failed or not. It skips, naming what is missing, where a binary is
// missing or the test does not run as root; under FASTER_REQUIRE_INTEROP=1
// it fails instead.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bins := map[string]string{}
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sinfo", "squeue", "scontrol", "srun", "sbatch"} {
		p, err := exec.LookPath(b)
		if err != nil {
			for _, d := range []string{"/usr/sbin", "/usr/bin"} {
				if _, e := os.Stat(filepath.Join(d, b)); e == nil {
					p, err = filepath.Join(d, b), nil
				}
			}
		}
		if err != nil {
			requireOrSkip(t, "slurmtest: %s missing (slurm-wlm, munge)", b)
		}
		bins[b] = p
	}
	if os.Geteuid() != 0 {
		requireOrSkip(t, "slurmtest: the one-host cluster runs as root (SlurmUser=root); uid %d", os.Geteuid())
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	// Not t.TempDir: a socket path must stay short.
	dir, err := os.MkdirTemp("", "slurmtest-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Node: host}
	var procs []*exec.Cmd
	t.Cleanup(func() {
		// Jobs done first (bounded polls), then the step daemons slurmd
		// left (slurmstepd, a child of init, its log under dir), then the
		// daemons.
		for try := 0; try < 40 && len(procs) == 3; try++ {
			out, err := c.Command(bins["squeue"], "-h").Output()
			if err != nil || len(strings.TrimSpace(string(out))) == 0 {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		killSteps(dir)
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Process.Kill()
			procs[i].Wait()
		}
		if t.Failed() {
			t.Log(c.Logs())
		}
		os.RemoveAll(dir)
	})
	for _, d := range []string{"state", "spool", "munge"} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
	}
	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(dir, "munge", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "munge", "munge.socket")
	start := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(bins[name], args...)
		cmd.Env = c.Env()
		log, err := os.Create(filepath.Join(dir, name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatalf("slurmtest: %s: %v", name, err)
		}
		log.Close()
		procs = append(procs, cmd)
	}
	start("munged", "-F", "--force", "--key-file", keyFile, "--socket", socket,
		"--pid-file", filepath.Join(dir, "munge", "munged.pid"), "--log-file", filepath.Join(dir, "munged.log"),
		"--seed-file", filepath.Join(dir, "munge", "munged.seed"))
	conf := fmt.Sprintf(`ClusterName=fastertest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d State=UNKNOWN
PartitionName=test Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
`, host, freePort(t), freePort(t), socket, dir, runtime.NumCPU())
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// munged's socket before the daemons that need it.
	for try := 0; ; try++ {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if try == 100 {
			t.Fatalf("slurmtest: munged made no socket\n%s", c.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	start("slurmctld", "-D", "-i", "-f", c.Conf)
	start("slurmd", "-D", "-f", c.Conf, "-N", host)
	// Ready when the node is idle: a bounded number of polls.
	var state string
	for try := 0; try < 120; try++ {
		out, _ := c.Command(bins["sinfo"], "-h", "-N", "-n", host, "-o", "%T").Output()
		state = strings.TrimSpace(string(out))
		if state == "idle" {
			return c
		}
		if strings.HasPrefix(state, "drain") {
			// A node that was up before (stale state) comes back drained.
			c.Command(bins["scontrol"], "update", "nodename="+host, "state=resume").Run()
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("slurmtest: node %s never idle (state %q)\n%s", host, state, c.Logs())
	return nil
}

// killSteps kills every slurmstepd with a file open under dir: this
// cluster's, not another's.
func killSteps(dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		comm, _ := os.ReadFile(filepath.Join(p, "comm"))
		if strings.TrimSpace(string(comm)) != "slurmstepd" {
			continue
		}
		fds, _ := filepath.Glob(filepath.Join(p, "fd", "*"))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, dir+"/") {
				if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				break
			}
		}
	}
}

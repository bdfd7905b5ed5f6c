package collective

import (
	"strings"
	"testing"
)

// FuzzHostlist parses any hostlist without expanding it: it never panics,
// a list it accepts names 1 to MaxHosts hosts, each host a non-empty name
// without a comma or a bracket, and the expansion (for a short list)
// agrees with the arithmetic.
func FuzzHostlist(f *testing.F) {
	for _, c := range hostlists {
		f.Add(c.list)
	}
	for _, s := range []string{"a[0-65536]b[0-65536]", "a[0-15]b[0-65535]", "n[1-", "n[[1]]", "x[009-011],y[1,3-4]z[7]", "[1-2]", "a,,b", "a[9223372036854775807]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		h, err := ParseHostlist(list)
		if err != nil {
			if !strings.Contains(err.Error(), "hostlist") {
				t.Fatalf("%q: %v does not say hostlist", list, err)
			}
			return
		}
		n := h.Len()
		if n < 1 || n > MaxHosts {
			t.Fatalf("%q: %d hosts", list, n)
		}
		for _, i := range []int{0, n / 2, n - 1} {
			name := h.Host(i)
			if name == "" || strings.ContainsAny(name, ",[]") {
				t.Fatalf("%q: host %d is %q", list, i, name)
			}
		}
		if n <= 1000 {
			all, err := ExpandHostlist(list)
			if err != nil || len(all) != n {
				t.Fatalf("%q: expanded %d hosts %v, Len %d", list, len(all), err, n)
			}
			for i, name := range all {
				if h.Host(i) != name {
					t.Fatalf("%q: host %d %q, expanded %q", list, i, h.Host(i), name)
				}
			}
		}
	})
}

// FuzzSchedulerEnv reads a rank's Config from any environment
// ("NAME=value" lines: torchrun's, Open MPI's, Slurm's): it never panics
// or hangs, a Config it returns is valid (Validate, Size <= MaxSize, the
// local rank below the local size, which is at most MaxSize), and an
// error names a variable that was set.
func FuzzSchedulerEnv(f *testing.F) {
	f.Add("OMPI_COMM_WORLD_RANK=abc\nOMPI_COMM_WORLD_SIZE=2\nOMPI_COMM_WORLD_LOCAL_SIZE=2\nMASTER_PORT=1")
	f.Add("SLURM_PROCID=3\nSLURM_STEP_ID=0\nSLURM_NTASKS=4\nSLURM_LOCALID=1\nSLURM_NODEID=1\nSLURM_TASKS_PER_NODE=2(x2)\nSLURM_JOB_NODELIST=gpu[07-08]\nSLURM_JOB_ID=123456")
	f.Add("SLURM_PROCID=0\nSLURM_STEP_ID=0\nSLURM_NTASKS=2\nSLURM_STEP_NODELIST=a[0-65536]b[0-65536]\nSLURM_JOB_ID=1")
	f.Add("RANK=3\nWORLD_SIZE=4\nLOCAL_RANK=1\nLOCAL_WORLD_SIZE=2\nGROUP_RANK=1\nMASTER_ADDR=10.0.0.1\nMASTER_PORT=29500\nTORCHELASTIC_USE_AGENT_STORE=True\nTORCHELASTIC_RESTART_COUNT=2")
	f.Add("RANK=0\nWORLD_SIZE=4294967298\nMASTER_PORT=1")
	f.Add("FASTER_COLLECTIVE_TIMEOUT=-1s")
	f.Fuzz(func(t *testing.T, environ string) {
		m := map[string]string{}
		for _, line := range strings.Split(environ, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				m[k] = v
			}
		}
		c, err := configFrom(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
		if err != nil {
			named := false
			for k := range m {
				named = named || k != "" && strings.Contains(err.Error(), k)
			}
			if !named {
				t.Fatalf("%q: %v names no variable that was set", environ, err)
			}
			return
		}
		if err := c.Validate(); err != nil || c.Size > MaxSize {
			t.Fatalf("%q: %+v: %v", environ, c, err)
		}
		if c.LocalSize > 0 && (c.LocalRank >= c.LocalSize || c.LocalSize > MaxSize) {
			t.Fatalf("%q: %+v: local rank or size out of range", environ, c)
		}
	})
}

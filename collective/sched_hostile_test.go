package collective

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A hostlist is read without expanding it: the first host of a list of
// 2^20 names costs the list's length, the i-th name is computed, and a
// list naming more than MaxHosts is refused (before: a[0-65536]b[0-65536]
// expanded 4.3e9 names to take the first: out of memory).
func TestHostlistNotExpanded(t *testing.T) {
	h, err := ParseHostlist("a[0-15]b[0-65535]")
	if err != nil || h.Len() != MaxHosts {
		t.Fatalf("a[0-15]b[0-65535]: %d hosts %v, want %d", h.Len(), err, MaxHosts)
	}
	for i, want := range map[int]string{0: "a0b0", 1: "a0b1", 65536: "a1b0", 70000: "a1b4464", MaxHosts - 1: "a15b65535"} {
		if got := h.Host(i); got != want {
			t.Errorf("host %d: %q, want %q", i, got, want)
		}
	}
	if n := testing.AllocsPerRun(10, func() {
		h, _ := ParseHostlist("a[0-15]b[0-65535]")
		_ = h.Host(0)
	}); n > 40 {
		t.Errorf("the first of 2^20 hosts: %v allocations, want a few (not expanded)", n)
	}
	for _, bad := range []string{"a[0-65536]b[0-65536]", "a[0-65535]b[0-65535]", "a[0-65535],b[0-65535],c[0-65535],d[0-65535],e[0-65535],f[0-65535],g[0-65535],h[0-65535],i[0-65535],j[0-65535],k[0-65535],l[0-65535],m[0-65535],n[0-65535],o[0-65535],p[0-65535],q[0-65535]",
		"a[0-65535]b[0-65535]c[0-65535]d[0-65535]e[0-65535]", "a[0-65536]", "a[0-9223372036854775806]"} {
		if _, err := ParseHostlist(bad); err == nil {
			t.Errorf("%.40q: no error", bad)
		}
	}
	// The arithmetic agrees with the expansion on every form.
	for _, c := range append(hostlists, struct {
		list string
		want []string
	}{"r[1-2]n[8-9]x[01,3-4]-ib,y", nil}) {
		h, err := ParseHostlist(c.list)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := ExpandHostlist(c.list)
		if h.Len() != len(all) {
			t.Errorf("%q: Len %d, expanded %d", c.list, h.Len(), len(all))
		}
		for i := range all {
			if h.Host(i) != all[i] {
				t.Errorf("%q: host %d %q, expanded %q", c.list, i, h.Host(i), all[i])
			}
		}
	}
}

// torchName matches torchrun's variable names standing alone, not as the
// end of a scheduler's (OMPI_COMM_WORLD_RANK ends in RANK).
var torchName = regexp.MustCompile(`(^|[^A-Z_])(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK)=`)

// A bad value of a scheduler's variable is reported under the variable
// read, never torchrun's name for it (before: OMPI_COMM_WORLD_RANK=abc was
// `RANK="abc"`, SLURM_NODEID=x `GROUP_RANK="x"`, a missing
// OMPI_COMM_WORLD_SIZE `WORLD_SIZE=""`); a count is bounded by MaxSize
// before anything is sized by it, and a hostlist by MaxHosts.
func TestSchedulerErrorsNameTheVariableRead(t *testing.T) {
	srun := []string{"SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_ID", "7", "SLURM_STEP_NODELIST", "h"}
	ompi := []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "MASTER_PORT", "1"}
	with := func(base []string, kv ...string) []string { return append(base[:len(base):len(base)], kv...) }
	for _, c := range []struct {
		env  []string
		want string
	}{
		{with(ompi, "OMPI_COMM_WORLD_RANK", "abc"), `OMPI_COMM_WORLD_RANK="abc"`},
		{with(ompi, "OMPI_COMM_WORLD_SIZE", "x", "OMPI_COMM_WORLD_LOCAL_SIZE", "x"), `OMPI_COMM_WORLD_SIZE="x"`},
		{[]string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "1", "MASTER_PORT", "1"}, "OMPI_COMM_WORLD_SIZE"},
		{with(ompi, "OMPI_COMM_WORLD_RANK", "2"), `OMPI_COMM_WORLD_RANK="2"`},
		{with(ompi, "OMPI_COMM_WORLD_LOCAL_RANK", "-1"), `OMPI_COMM_WORLD_LOCAL_RANK="-1"`},
		{with(ompi, "OMPI_COMM_WORLD_LOCAL_RANK", "5"), `OMPI_COMM_WORLD_LOCAL_RANK="5"`},
		{with(ompi, "OMPI_COMM_WORLD_SIZE", "1099511627776", "OMPI_COMM_WORLD_LOCAL_SIZE", "1099511627776"), `OMPI_COMM_WORLD_SIZE="1099511627776"`},
		{with(srun, "SLURM_PROCID", "abc"), `SLURM_PROCID="abc"`},
		{with(srun, "SLURM_PROCID", "2"), `SLURM_PROCID="2"`},
		{with(srun, "SLURM_NTASKS", "x"), `SLURM_NTASKS="x"`},
		{with(srun, "SLURM_STEP_NUM_TASKS", "0"), `SLURM_STEP_NUM_TASKS="0"`},
		{with(srun, "SLURM_NTASKS", "4294967298"), `SLURM_NTASKS="4294967298"`},
		{[]string{"SLURM_PROCID", "0", "SLURM_STEP_ID", "0"}, "SLURM_NTASKS"},
		{with(srun, "SLURM_LOCALID", "x"), `SLURM_LOCALID="x"`},
		{with(srun, "SLURM_NODEID", "x", "SLURM_TASKS_PER_NODE", "2"), `SLURM_NODEID="x"`},
		{with(srun, "SLURM_NODEID", "x"), `SLURM_NODEID="x"`},
		{with(srun, "SLURM_TASKS_PER_NODE", "2(x"), `SLURM_TASKS_PER_NODE="2(x"`},
		{with(srun, "SLURM_STEP_TASKS_PER_NODE", "1", "SLURM_NODEID", "3"), `SLURM_STEP_TASKS_PER_NODE="1"`},
		{with(srun, "SLURM_NTASKS_PER_NODE", "x"), `SLURM_NTASKS_PER_NODE="x"`},
		{with(srun, "SLURM_LOCALID", "2", "SLURM_TASKS_PER_NODE", "2"), `SLURM_LOCALID="2"`},
		{with(srun, "SLURM_TASKS_PER_NODE", "4"), `SLURM_TASKS_PER_NODE="4"`}, // 4 on a node of a step of 2
		{with(srun, "SLURM_STEP_NODELIST", "h["), `SLURM_STEP_NODELIST="h["`},
		{with(srun, "SLURM_STEP_NODELIST", "a[0-65536]b[0-65536]"), "SLURM_STEP_NODELIST"},
		{with(srun, "SLURM_STEP_NODELIST", "", "SLURM_JOB_NODELIST", "a[0-65535]b[0-65535]"), "SLURM_JOB_NODELIST"},
		{with(srun, "SLURM_JOB_ID", "x"), `SLURM_JOB_ID="x"`},
		// torchrun's own, bounded and named as they are.
		{[]string{"RANK", "0", "WORLD_SIZE", "4294967298", "MASTER_PORT", "1"}, `WORLD_SIZE="4294967298"`},
		{[]string{"RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "1", "LOCAL_WORLD_SIZE", "3"}, `LOCAL_WORLD_SIZE="3"`},
	} {
		_, err := configFrom(envOf(c.env...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.env, err, c.want)
			continue
		}
		if !strings.HasPrefix(c.env[0], "RANK") && torchName.MatchString(err.Error()) {
			t.Errorf("%v: %v names torchrun's variable, not the one read", c.env, err)
		}
	}
}

// A size past MaxSize is refused by Validate too: Gloo's C int would
// truncate it.
func TestConfigValidateBoundsSize(t *testing.T) {
	if err := (Config{Size: MaxSize + 1}).Validate(); err == nil {
		t.Error("size MaxSize+1: Validate = nil")
	}
	if err := (Config{Size: 1 << 32, Rank: 0}).Validate(); err == nil {
		t.Error("size 2^32: Validate = nil")
	}
}

// A long bad value is quoted cut short: the error stays one readable line
// (before: a 1 MB hostlist was printed whole, twice).
func TestSchedulerErrorsQuoteLongValuesShort(t *testing.T) {
	long := strings.Repeat("n[1-2]", 1<<18) + "["
	for _, env := range [][]string{
		{"SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2", "SLURM_STEP_NODELIST", long},
		{"RANK", "0", "WORLD_SIZE", long},
	} {
		_, err := configFrom(envOf(env...))
		if err == nil || !strings.Contains(err.Error(), env[len(env)-2]+"=") || len(err.Error()) > 1000 {
			t.Errorf("a 1.5 MB %s: %d bytes of error, want under 1000 naming it", env[len(env)-2], len(fmt.Sprint(err)))
		}
	}
}

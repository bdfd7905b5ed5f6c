package collective

import (
	"fmt"
	"strconv"
	"strings"
)

// schedulerEnv returns a lookup that answers torchrun's variables from the
// scheduler that started this process when torchrun's own are absent.
// Precedence, nearest launcher first: torchrun (RANK or WORLD_SIZE set: its
// variables alone count, also inside an srun step whose SLURM_PROCID counts
// nodes), then Open MPI (OMPI_COMM_WORLD_*: mpirun inside a Slurm
// allocation starts its daemons with srun, so SLURM_PROCID there is a
// node's index, not the rank), then Slurm (a task of an srun step:
// SLURM_PROCID with SLURM_STEP_ID; a batch script alone, outside srun, is
// one process). MASTER_ADDR and MASTER_PORT, when set, always win.
//
// Slurm: RANK=SLURM_PROCID, WORLD_SIZE=SLURM_STEP_NUM_TASKS (else
// SLURM_NTASKS), LOCAL_RANK=SLURM_LOCALID, LOCAL_WORLD_SIZE=this node's
// entry of SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE, e.g.
// "2(x3),1"; else SLURM_NTASKS_PER_NODE), GROUP_RANK=SLURM_NODEID,
// MASTER_ADDR=the first host of SLURM_STEP_NODELIST (else
// SLURM_JOB_NODELIST, SLURM_NODELIST), MASTER_PORT=15000 + SLURM_JOB_ID %
// 10000 (Lightning's choice: below Linux's ephemeral ports).
//
// Open MPI: RANK=OMPI_COMM_WORLD_RANK, WORLD_SIZE=OMPI_COMM_WORLD_SIZE,
// LOCAL_RANK/LOCAL_WORLD_SIZE=OMPI_COMM_WORLD_LOCAL_RANK/LOCAL_SIZE. Open
// MPI names no host: MASTER_ADDR defaults to 127.0.0.1 only when every rank
// is on this machine (LOCAL_SIZE = SIZE); across machines it must be passed
// (mpirun -x MASTER_ADDR=host-of-rank-0 -x MASTER_PORT=port), and so must
// MASTER_PORT whenever WORLD_SIZE > 1.
//
// Every value answered for one of torchrun's names carries the variable it
// was read from, so that an error names what the user or the scheduler
// set (OMPI_COMM_WORLD_RANK="abc", never RANK="abc"). A hostlist is parsed,
// not expanded (ParseHostlist): its first host is MASTER_ADDR.
// envLookup answers a variable for configFrom: its value and how it was
// given, `NAME="value"` of the variable actually read (for torchrun's
// names answered from a scheduler's, the scheduler's variable, or what it
// was derived from).
type envLookup func(name string) (v, given string, ok bool)

// answer is a value of envLookup.
type answer struct{ v, given string }

// maxQuoted is how much of a variable's value an error quotes.
const maxQuoted = 200

// given is NAME="value" as an error names it, a long value cut short.
func given(name, v string) string {
	if len(v) > maxQuoted {
		return fmt.Sprintf("%s=%q… (%d bytes)", name, v[:maxQuoted], len(v))
	}
	return fmt.Sprintf("%s=%q", name, v)
}

// plain is lookup answering each variable as itself.
func plain(lookup func(string) (string, bool)) envLookup {
	return func(k string) (string, string, bool) {
		v, ok := lookup(k)
		return v, given(k, v), ok
	}
}

func schedulerEnv(lookup func(string) (string, bool)) (envLookup, error) {
	_, r := lookup("RANK")
	_, w := lookup("WORLD_SIZE")
	if r || w {
		return plain(lookup), nil
	}
	m := map[string]answer{}
	// from answers torch's name with the first of names that is set.
	from := func(torch string, names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := lookup(n); ok {
				m[torch] = answer{v, given(n, v)}
				return n, true
			}
		}
		return "", false
	}
	if _, ok := lookup("OMPI_COMM_WORLD_RANK"); ok {
		from("RANK", "OMPI_COMM_WORLD_RANK")
		if _, ok := from("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"); !ok {
			return nil, fmt.Errorf("collective: OMPI_COMM_WORLD_RANK is set but not OMPI_COMM_WORLD_SIZE: is this process started by mpirun?")
		}
		from("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")
		if _, ok := from("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"); ok && m["LOCAL_WORLD_SIZE"].v == m["WORLD_SIZE"].v {
			m["MASTER_ADDR"] = answer{DefaultAddr, "MASTER_ADDR (127.0.0.1: every rank of Open MPI on this machine)"}
		}
		if _, ok := m["MASTER_ADDR"]; !ok {
			if v, _ := lookup("MASTER_ADDR"); v == "" {
				local, ok := lookup("OMPI_COMM_WORLD_LOCAL_SIZE")
				if !ok {
					local = "unset"
				} else {
					local = strconv.Quote(local)
				}
				return nil, fmt.Errorf("collective: under mpirun across machines (OMPI_COMM_WORLD_LOCAL_SIZE %s, %s) MASTER_ADDR is not set: pass mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=<port>", local, m["WORLD_SIZE"].given)
			}
		}
	} else if _, ok := lookup("SLURM_PROCID"); ok && has(lookup, "SLURM_STEP_ID", "SLURM_STEPID") {
		from("RANK", "SLURM_PROCID")
		if _, ok := from("WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"); !ok {
			return nil, fmt.Errorf("collective: SLURM_PROCID is set (a task of an srun step) but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS: is this process started by srun?")
		}
		from("LOCAL_RANK", "SLURM_LOCALID")
		node := 0
		if v, ok := lookup("SLURM_NODEID"); ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("collective: %s: want a non-negative integer", given("SLURM_NODEID", v))
			}
			node = n
			m["GROUP_RANK"] = answer{v, given("SLURM_NODEID", v)}
		}
		if name, spec := first(lookup, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"); spec != "" {
			n, err := tasksOnNode(spec, node)
			if err != nil {
				return nil, fmt.Errorf("collective: %s: %v", given(name, spec), err)
			}
			m["LOCAL_WORLD_SIZE"] = answer{strconv.Itoa(n), fmt.Sprintf("%s (node %d's entry: %d)", given(name, spec), node, n)}
		} else {
			from("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE")
		}
		if name, list := first(lookup, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"); list != "" {
			hosts, err := parseHostlist(list)
			if err != nil {
				return nil, fmt.Errorf("collective: %s: %v", given(name, list), err)
			}
			m["MASTER_ADDR"] = answer{hosts.Host(0), fmt.Sprintf("MASTER_ADDR (%q, the first host of %s)", hosts.Host(0), given(name, list))}
		}
		if v, ok := lookup("SLURM_JOB_ID"); ok {
			id, err := strconv.Atoi(v)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("collective: %s: want a non-negative integer", given("SLURM_JOB_ID", v))
			}
			p := strconv.Itoa(SlurmPort(id))
			m["MASTER_PORT"] = answer{p, fmt.Sprintf("MASTER_PORT (%s: 15000 + %s %% 10000)", p, given("SLURM_JOB_ID", v))}
		}
	} else {
		return plain(lookup), nil
	}
	return func(k string) (string, string, bool) {
		if k == "MASTER_ADDR" || k == "MASTER_PORT" {
			if v, ok := lookup(k); ok && v != "" {
				return v, given(k, v), true
			}
		}
		if a, ok := m[k]; ok {
			return a.v, a.given, true
		}
		switch k {
		case "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK":
			return "", "", false // the scheduler's, not a stray torchrun value
		}
		v, ok := lookup(k)
		return v, given(k, v), ok
	}, nil
}

// SlurmPort is the rendezvous port of a Slurm job without MASTER_PORT:
// 15000 + jobID % 10000, as PyTorch Lightning derives it.
func SlurmPort(jobID int) int { return 15000 + jobID%10000 }

func has(lookup func(string) (string, bool), names ...string) bool {
	for _, n := range names {
		if _, ok := lookup(n); ok {
			return true
		}
	}
	return false
}

// first returns the first of names set to a non-empty value, and it.
func first(lookup func(string) (string, bool), names ...string) (string, string) {
	for _, n := range names {
		if v, ok := lookup(n); ok && v != "" {
			return n, v
		}
	}
	return "", ""
}

// TasksOnNode reads Slurm's tasks-per-node syntax ("2(x3),1": two tasks on
// each of the first three nodes, one on the fourth) and returns node's
// count, at most MaxSize.
func TasksOnNode(spec string, node int) (int, error) {
	n, err := tasksOnNode(spec, node)
	if err != nil {
		return 0, fmt.Errorf("collective: tasks per node %q: %v", spec, err)
	}
	return n, nil
}

func tasksOnNode(spec string, node int) (int, error) {
	asked := node
	for _, part := range strings.Split(spec, ",") {
		count, rep := part, "1"
		if i := strings.Index(part, "(x"); i >= 0 && strings.HasSuffix(part, ")") {
			count, rep = part[:i], part[i+2:len(part)-1]
		}
		c, err1 := strconv.Atoi(count)
		r, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || c < 0 || r < 1 {
			return 0, fmt.Errorf("want counts such as 2(x3),1")
		}
		if c > MaxSize {
			return 0, fmt.Errorf("%d tasks on a node: more than %d", c, MaxSize)
		}
		if node < r {
			return c, nil
		}
		node -= r
	}
	return 0, fmt.Errorf("no entry for node %d", asked)
}

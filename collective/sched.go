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
func schedulerEnv(lookup func(string) (string, bool)) (func(string) (string, bool), error) {
	_, r := lookup("RANK")
	_, w := lookup("WORLD_SIZE")
	if r || w {
		return lookup, nil
	}
	m := map[string]string{}
	if rank, ok := lookup("OMPI_COMM_WORLD_RANK"); ok {
		m["RANK"] = rank
		m["WORLD_SIZE"], _ = lookup("OMPI_COMM_WORLD_SIZE")
		if v, ok := lookup("OMPI_COMM_WORLD_LOCAL_RANK"); ok {
			m["LOCAL_RANK"] = v
		}
		if v, ok := lookup("OMPI_COMM_WORLD_LOCAL_SIZE"); ok {
			m["LOCAL_WORLD_SIZE"] = v
			if v == m["WORLD_SIZE"] {
				m["MASTER_ADDR"] = DefaultAddr
			}
		}
		if _, ok := m["MASTER_ADDR"]; !ok {
			if v, _ := lookup("MASTER_ADDR"); v == "" {
				return nil, fmt.Errorf("collective: under mpirun across machines MASTER_ADDR is not set: pass mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=<port>")
			}
		}
	} else if rank, ok := lookup("SLURM_PROCID"); ok && has(lookup, "SLURM_STEP_ID", "SLURM_STEPID") {
		m["RANK"] = rank
		m["WORLD_SIZE"] = first(lookup, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
		if v, ok := lookup("SLURM_LOCALID"); ok {
			m["LOCAL_RANK"] = v
		}
		node, _ := lookup("SLURM_NODEID")
		if node != "" {
			m["GROUP_RANK"] = node
		}
		if spec := first(lookup, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"); spec != "" {
			n, err := TasksOnNode(spec, atoiOr(node, 0))
			if err != nil {
				return nil, err
			}
			m["LOCAL_WORLD_SIZE"] = strconv.Itoa(n)
		} else if v, ok := lookup("SLURM_NTASKS_PER_NODE"); ok {
			m["LOCAL_WORLD_SIZE"] = v
		}
		if list := first(lookup, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"); list != "" {
			hosts, err := ExpandHostlist(list)
			if err != nil {
				return nil, err
			}
			m["MASTER_ADDR"] = hosts[0]
		}
		if v, ok := lookup("SLURM_JOB_ID"); ok {
			id, err := strconv.Atoi(v)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("collective: SLURM_JOB_ID=%q: want a non-negative integer", v)
			}
			m["MASTER_PORT"] = strconv.Itoa(SlurmPort(id))
		}
	} else {
		return lookup, nil
	}
	return func(k string) (string, bool) {
		if k == "MASTER_ADDR" || k == "MASTER_PORT" {
			if v, ok := lookup(k); ok && v != "" {
				return v, true
			}
		}
		v, ok := m[k]
		if ok {
			return v, true
		}
		switch k {
		case "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK":
			return "", false // the scheduler's, not a stray torchrun value
		}
		return lookup(k)
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

func first(lookup func(string) (string, bool), names ...string) string {
	for _, n := range names {
		if v, ok := lookup(n); ok && v != "" {
			return v
		}
	}
	return ""
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

// TasksOnNode reads Slurm's tasks-per-node syntax ("2(x3),1": two tasks on
// each of the first three nodes, one on the fourth) and returns node's count.
func TasksOnNode(spec string, node int) (int, error) {
	bad := func() (int, error) {
		return 0, fmt.Errorf("collective: tasks per node %q: want counts such as 2(x3),1", spec)
	}
	for _, part := range strings.Split(spec, ",") {
		count, rep := part, "1"
		if i := strings.Index(part, "(x"); i >= 0 && strings.HasSuffix(part, ")") {
			count, rep = part[:i], part[i+2:len(part)-1]
		}
		c, err1 := strconv.Atoi(count)
		r, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || c < 0 || r < 1 {
			return bad()
		}
		if node < r {
			return c, nil
		}
		node -= r
	}
	return 0, fmt.Errorf("collective: tasks per node %q: no entry for this node", spec)
}

// ExpandHostlist expands Slurm's hostlist syntax, as `scontrol show
// hostnames` does: "node[01-03,07],gpu-a[1-2]" is node01 node02 node03
// node07 gpu-a1 gpu-a2; ranges keep their zero padding; several bracket
// groups in one name multiply ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2).
func ExpandHostlist(list string) ([]string, error) {
	var hosts []string
	depth, start := 0, 0
	for i := 0; i <= len(list); i++ {
		if i < len(list) {
			switch list[i] {
			case '[':
				depth++
				if depth > 1 {
					return nil, fmt.Errorf("collective: hostlist %q: nested brackets", list)
				}
				continue
			case ']':
				depth--
				if depth < 0 {
					return nil, fmt.Errorf("collective: hostlist %q: unbalanced brackets", list)
				}
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		if depth != 0 {
			return nil, fmt.Errorf("collective: hostlist %q: unbalanced brackets", list)
		}
		if item := strings.TrimSpace(list[start:i]); item != "" {
			names, err := expandHost(item)
			if err != nil {
				return nil, fmt.Errorf("collective: hostlist %q: %w", list, err)
			}
			hosts = append(hosts, names...)
		}
		start = i + 1
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("collective: hostlist %q: no host", list)
	}
	return hosts, nil
}

// expandHost expands one host item's bracket groups, left to right.
func expandHost(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']') + open
	prefix, rest := item[:open], item[end+1:]
	var values []string
	for _, r := range strings.Split(item[open+1:end], ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a || lo == "" {
			return nil, fmt.Errorf("bad range %q", r)
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("range %q too large", r)
		}
		width := len(lo)
		for n := a; n <= b; n++ {
			values = append(values, fmt.Sprintf("%0*d", width, n))
		}
	}
	tails, err := expandHost(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range values {
		for _, t := range tails {
			out = append(out, prefix+v+t)
		}
	}
	return out, nil
}

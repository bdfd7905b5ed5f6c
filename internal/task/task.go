// Package task reads which task of a split job this process is — task i
// of n of a dataset conversion (faster pack, faster resize) — from an
// explicit "--task i/n" or from the environment a scheduler sets. It
// reads the schedulers' own task index; there is no coordinator.
//
// Precedence: an explicit --task wins and the environment is not read.
// Otherwise every source below whose variables are set is read:
//
//	Kubernetes Indexed Job  JOB_COMPLETION_INDEX, count from --task-count or FASTER_TASK_COUNT
//	Slurm job array         SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN (÷ SLURM_ARRAY_TASK_STEP), SLURM_ARRAY_TASK_COUNT
//	srun                    SLURM_PROCID, SLURM_NTASKS
//	Open MPI                OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//	PMI (MPICH, Intel MPI)  PMI_RANK, PMI_SIZE
//	torchrun                RANK, WORLD_SIZE
//
// A source counts when both its variables are set (Kubernetes sets no
// count: JOB_COMPLETION_INDEX without one is an error) and its count is
// above 1 (a Slurm batch script sees SLURM_PROCID=0 SLURM_NTASKS=1: one
// task, no split). The sources that count must agree on index and count —
// mpirun or srun under Slurm set several, with the same values — and the
// first in the order above is named; sources that disagree are an error
// naming each of them with its values (pass --task to choose). A value
// that is not a number, a count above MaxCount, an index outside its count
// (also of one task: JOB_COMPLETION_INDEX=3 with a count of 1 is an error,
// not the whole job), or a Slurm array that is not an evenly stepped range
// is an error naming the variables (or flags) as they were given.
package task

import (
	"fmt"
	"strconv"
	"strings"
)

// Task is task Index of Count (0 ≤ Index < Count), and where that was read.
type Task struct {
	Index  int    `json:"index"`
	Count  int    `json:"count"`
	Source string `json:"source"` // "--task" or a scheduler and its variables
}

func (t Task) String() string { return fmt.Sprintf("task %d/%d (from %s)", t.Index, t.Count, t.Source) }

// CountEnv is the variable a Kubernetes Indexed Job sets (from its
// spec.completions, in the pod template) to give the task count, which
// Kubernetes does not put in the pod's environment.
const CountEnv = "FASTER_TASK_COUNT"

// MaxCount is the largest task count read, from a flag or the
// environment: Kubernetes' limit on an Indexed Job's completions, and
// shard.MaxTasks. A count is checked against it when it is parsed, before
// anything is sized by it.
const MaxCount = 100_000

// tooMany is the error of a count above MaxCount; given is the flag or
// variable with its value as the user gave it.
func tooMany(given string) error {
	return fmt.Errorf("%s: want at most %d tasks (Kubernetes' limit on an Indexed Job's completions)", given, MaxCount)
}

// quote is v quoted for an error, a long value cut short.
func quote(v string) string {
	const max = 200
	if len(v) > max {
		return fmt.Sprintf("%q… (%d bytes)", v[:max], len(v))
	}
	return strconv.Quote(v)
}

// Parse reads "i/n" (0 ≤ i < n ≤ MaxCount).
func Parse(s string) (Task, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Task{}, fmt.Errorf("--task %s: want i/n with 0 <= i < n (task 0/4 is the first of four)", quote(s))
	}
	if n > MaxCount {
		return Task{}, tooMany("--task " + quote(s))
	}
	return Task{Index: i, Count: n, Source: "--task"}, nil
}

// OrNil is &t when ok (Resolve found a task), else nil: the task a
// report names, left out for a job run whole.
func OrNil(t Task, ok bool) *Task {
	if !ok {
		return nil
	}
	return &t
}

// Resolve returns this process's task: from flag ("i/n", empty when not
// given), else from the environment read by getenv (os.Getenv). count is
// --task-count (0 when not given): the task count of a Kubernetes Indexed
// Job; with another source it must equal that source's count. ok is false
// when nothing says this is one task of several: the whole job runs here.
func Resolve(flag string, count int, getenv func(string) string) (t Task, ok bool, err error) {
	if count < 0 {
		return Task{}, false, fmt.Errorf("--task-count %d: want a positive number", count)
	}
	if count > MaxCount {
		return Task{}, false, tooMany(fmt.Sprintf("--task-count %d", count))
	}
	if flag != "" {
		t, err := Parse(flag)
		if err != nil {
			return Task{}, false, err
		}
		if count > 0 && count != t.Count {
			return Task{}, false, fmt.Errorf("--task %s and --task-count %d disagree", flag, count)
		}
		return t, true, nil
	}
	found, err := fromEnv(count, getenv)
	if err != nil {
		return Task{}, false, err
	}
	if len(found) == 0 {
		if count > 0 {
			return Task{}, false, fmt.Errorf("--task-count %d without a task index: set by a Kubernetes Indexed Job (JOB_COMPLETION_INDEX), or pass --task i/%d", count, count)
		}
		return Task{}, false, nil
	}
	for _, f := range found[1:] {
		if f.Index != found[0].Index || f.Count != found[0].Count {
			var names []string
			for _, f := range found {
				names = append(names, fmt.Sprintf("%s says %d/%d", f.Source, f.Index, f.Count))
			}
			return Task{}, false, fmt.Errorf("the environment names different tasks: %s; pass --task i/n to choose", strings.Join(names, "; "))
		}
	}
	t = found[0]
	if count > 0 && count != t.Count {
		return Task{}, false, fmt.Errorf("--task-count %d disagrees with %s (%d tasks)", count, t.Source, t.Count)
	}
	return t, true, nil
}

// fromEnv lists the sources that count, in precedence order.
func fromEnv(countFlag int, getenv func(string) string) ([]Task, error) {
	// num reads a non-negative integer; a count (isCount) at most MaxCount.
	num := func(name string, isCount bool) (int, bool, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("%s=%s: not a non-negative integer", name, quote(getenv(name)))
		}
		if isCount && n > MaxCount {
			return 0, false, tooMany(fmt.Sprintf("%s=%d", name, n))
		}
		return n, true, nil
	}
	var found []Task
	// add lists task i of n; idx and cnt say where each was read, as
	// given ("NAME=value", "--task-count n").
	add := func(source, idx, cnt string, i, n int) error {
		if i >= n {
			return fmt.Errorf("%s: %s is not below %s: the task index must be less than the task count", source, idx, cnt)
		}
		if n == 1 {
			return nil // one task: no split
		}
		found = append(found, Task{Index: i, Count: n, Source: source})
		return nil
	}

	// Kubernetes Indexed Job.
	if i, ok, err := num("JOB_COMPLETION_INDEX", false); err != nil {
		return nil, err
	} else if ok {
		n, cntName, cnt := countFlag, "--task-count", fmt.Sprintf("--task-count %d", countFlag)
		if n == 0 {
			var set bool
			if n, set, err = num(CountEnv, true); err != nil {
				return nil, err
			} else if !set {
				return nil, fmt.Errorf("JOB_COMPLETION_INDEX=%d is set but not the task count (Kubernetes does not put the Job's completions in the pod): pass --task-count N or set %s to the Job's spec.completions in the pod template", i, CountEnv)
			}
			cntName, cnt = CountEnv, fmt.Sprintf("%s=%d", CountEnv, n)
		}
		if n == 0 {
			return nil, fmt.Errorf("%s=0: want the Job's completions", CountEnv)
		}
		if err := add("Kubernetes Indexed Job (JOB_COMPLETION_INDEX, "+cntName+")", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), cnt, i, n); err != nil {
			return nil, err
		}
	}

	// Slurm job array: the ids run MIN, MIN+STEP, …, MAX.
	if id, ok, err := num("SLURM_ARRAY_TASK_ID", false); err != nil {
		return nil, err
	} else if ok {
		n, nok, err := num("SLURM_ARRAY_TASK_COUNT", true)
		if err != nil {
			return nil, err
		}
		lo, _, err := num("SLURM_ARRAY_TASK_MIN", false)
		if err != nil {
			return nil, err
		}
		hi, hiok, err := num("SLURM_ARRAY_TASK_MAX", false)
		if err != nil {
			return nil, err
		}
		step, sok, err := num("SLURM_ARRAY_TASK_STEP", false)
		if err != nil {
			return nil, err
		}
		if !sok || step == 0 {
			step = 1
		}
		if nok && n > 1 {
			const src = "Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT)"
			if id < lo || (id-lo)%step != 0 || (hiok && (hi < lo || (hi-lo)%step != 0 || (hi-lo)/step+1 != n)) {
				return nil, fmt.Errorf("%s: SLURM_ARRAY_TASK_ID=%d in an array of %d tasks from %d to %d step %d is not one of an evenly stepped range; submit --array=0-%d or pass --task i/n", src, id, n, lo, hi, step, n-1)
			}
		}
		if nok {
			const src = "Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT)"
			i := (id - lo) / step
			if id < lo {
				i = n // below the array's first id: outside it
			}
			idx := fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", id)
			if lo != 0 || step != 1 {
				idx += fmt.Sprintf(" (task %d of the array from SLURM_ARRAY_TASK_MIN=%d step %d)", i, lo, step)
			}
			if err := add(src, idx, fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%d", n), i, n); err != nil {
				return nil, err
			}
		}
	}

	for _, s := range []struct{ name, idx, cnt string }{
		{"srun (SLURM_PROCID, SLURM_NTASKS)", "SLURM_PROCID", "SLURM_NTASKS"},
		{"Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
		{"PMI (PMI_RANK, PMI_SIZE)", "PMI_RANK", "PMI_SIZE"},
		{"torchrun (RANK, WORLD_SIZE)", "RANK", "WORLD_SIZE"},
	} {
		i, iok, err := num(s.idx, false)
		if err != nil {
			return nil, err
		}
		n, nok, err := num(s.cnt, true)
		if err != nil {
			return nil, err
		}
		if iok && nok {
			if err := add(s.name, fmt.Sprintf("%s=%d", s.idx, i), fmt.Sprintf("%s=%d", s.cnt, n), i, n); err != nil {
				return nil, err
			}
		}
	}
	return found, nil
}

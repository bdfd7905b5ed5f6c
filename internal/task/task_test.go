package task

import (
	"fmt"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Every scheduler's variables give the task, each named as its source.
func TestResolveSources(t *testing.T) {
	for _, tc := range []struct {
		env         []string
		count       int
		index, n    int
		sourceWords string
	}{
		{[]string{"JOB_COMPLETION_INDEX", "2", "FASTER_TASK_COUNT", "3"}, 0, 2, 3, "JOB_COMPLETION_INDEX, FASTER_TASK_COUNT"},
		{[]string{"JOB_COMPLETION_INDEX", "1"}, 3, 1, 3, "JOB_COMPLETION_INDEX, --task-count"},
		{[]string{"SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "2"}, 0, 2, 3, "Slurm job array"},
		// --array=5-7: the first task is 0.
		{[]string{"SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "5", "SLURM_ARRAY_TASK_MAX", "7"}, 0, 0, 3, "Slurm job array"},
		// --array=1-9:4 → ids 1, 5, 9.
		{[]string{"SLURM_ARRAY_TASK_ID", "9", "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "9", "SLURM_ARRAY_TASK_STEP", "4"}, 0, 2, 3, "Slurm job array"},
		{[]string{"SLURM_PROCID", "1", "SLURM_NTASKS", "3"}, 0, 1, 3, "srun"},
		{[]string{"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "3"}, 0, 1, 3, "Open MPI"},
		{[]string{"PMI_RANK", "0", "PMI_SIZE", "3"}, 0, 0, 3, "PMI"},
		{[]string{"RANK", "2", "WORLD_SIZE", "3"}, 0, 2, 3, "torchrun"},
		// mpirun under a Slurm allocation: the batch step's SLURM_PROCID=0
		// of 1 is no split and does not contradict Open MPI.
		{[]string{"SLURM_PROCID", "0", "SLURM_NTASKS", "1", "OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3"}, 0, 2, 3, "Open MPI"},
		// srun of an MPI program: srun, PMI and Open MPI agree; srun named.
		{[]string{"SLURM_PROCID", "2", "SLURM_NTASKS", "3", "PMI_RANK", "2", "PMI_SIZE", "3", "OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3"}, 0, 2, 3, "srun"},
		// A Slurm job array task's batch script: the array is the task.
		{[]string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_PROCID", "0", "SLURM_NTASKS", "1"}, 0, 1, 3, "Slurm job array"},
	} {
		got, ok, err := Resolve("", tc.count, env(tc.env...))
		if err != nil || !ok || got.Index != tc.index || got.Count != tc.n || !strings.Contains(got.Source, tc.sourceWords) {
			t.Errorf("%v: got %+v %v %v, want %d/%d from %q", tc.env, got, ok, err, tc.index, tc.n, tc.sourceWords)
		}
	}
}

// --task wins over the environment, even one that says otherwise.
func TestResolveFlagWins(t *testing.T) {
	got, ok, err := Resolve("1/4", 0, env("RANK", "3", "WORLD_SIZE", "8", "SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_COUNT", "2"))
	if err != nil || !ok || got.Index != 1 || got.Count != 4 || got.Source != "--task" {
		t.Fatalf("got %+v %v %v", got, ok, err)
	}
}

func TestResolveNone(t *testing.T) {
	for _, e := range [][]string{
		nil,
		{"SLURM_PROCID", "0", "SLURM_NTASKS", "1"}, // a Slurm batch script
		{"RANK", "0"},              // half a pair is no source
		{"FASTER_TASK_COUNT", "4"}, // a count without an index
	} {
		if got, ok, err := Resolve("", 0, env(e...)); ok || err != nil {
			t.Errorf("%v: got %+v %v %v, want no task", e, got, ok, err)
		}
	}
}

// Contradictions and malformed values are errors naming their variables.
func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		flag  string
		count int
		env   []string
		want  []string
	}{
		{"", 0, []string{"SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "3", "RANK", "0", "WORLD_SIZE", "2"},
			[]string{"Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) says 1/3", "torchrun (RANK, WORLD_SIZE) says 0/2", "--task"}},
		{"", 0, []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "2", "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"},
			[]string{"srun (SLURM_PROCID, SLURM_NTASKS) says 1/2", "Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) says 0/2"}},
		{"", 0, []string{"JOB_COMPLETION_INDEX", "1"}, []string{"JOB_COMPLETION_INDEX=1", "--task-count", "FASTER_TASK_COUNT"}},
		{"", 0, []string{"JOB_COMPLETION_INDEX", "3", "FASTER_TASK_COUNT", "3"}, []string{"JOB_COMPLETION_INDEX=3", "FASTER_TASK_COUNT=3"}},
		{"", 0, []string{"RANK", "x", "WORLD_SIZE", "2"}, []string{`RANK="x"`}},
		{"", 0, []string{"SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_COUNT", "3", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "7"},
			[]string{"evenly stepped", "SLURM_ARRAY_TASK_ID=3"}},
		{"", 4, nil, []string{"--task-count 4 without a task index"}},
		{"", 4, []string{"RANK", "0", "WORLD_SIZE", "2"}, []string{"--task-count 4 disagrees with torchrun"}},
		{"3/3", 0, nil, []string{`--task "3/3"`}},
		{"1/4", 3, nil, []string{"disagree"}},
		{"a", 0, nil, []string{`--task "a"`}},
	} {
		_, _, err := Resolve(tc.flag, tc.count, env(tc.env...))
		if err == nil {
			t.Errorf("%q %d %v: no error", tc.flag, tc.count, tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q %d %v: %v, want it to name %q", tc.flag, tc.count, tc.env, err, w)
			}
		}
	}
}

// A count read from the flag or any scheduler's variable is bounded by
// MaxCount when it is parsed, the error naming where it was read and the
// bound (before: 2^40 tasks were accepted, and a merge of them ran out of
// memory).
func TestResolveCountsBounded(t *testing.T) {
	const huge = "1099511627776" // 2^40
	for _, tc := range []struct {
		flag  string
		count int
		env   []string
		want  string
	}{
		{"0/" + huge, 0, nil, `--task "0/1099511627776"`},
		{"0/100001", 0, nil, `--task "0/100001"`},
		{"", 1 << 40, []string{"JOB_COMPLETION_INDEX", "0"}, "--task-count 1099511627776"},
		{"0/2", 1 << 40, nil, "--task-count 1099511627776"},
		{"", 0, []string{"JOB_COMPLETION_INDEX", "0", "FASTER_TASK_COUNT", huge}, "FASTER_TASK_COUNT=" + huge},
		{"", 0, []string{"SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_COUNT", huge}, "SLURM_ARRAY_TASK_COUNT=" + huge},
		{"", 0, []string{"SLURM_PROCID", "0", "SLURM_NTASKS", huge}, "SLURM_NTASKS=" + huge},
		{"", 0, []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "100001"}, "OMPI_COMM_WORLD_SIZE=100001"},
		{"", 0, []string{"PMI_RANK", "0", "PMI_SIZE", huge}, "PMI_SIZE=" + huge},
		{"", 0, []string{"RANK", "0", "WORLD_SIZE", huge}, "WORLD_SIZE=" + huge},
		// A count alone (no index) is no source, but is still read.
		{"", 0, []string{"SLURM_NTASKS", huge}, "SLURM_NTASKS=" + huge},
	} {
		_, _, err := Resolve(tc.flag, tc.count, env(tc.env...))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "100000") {
			t.Errorf("%q %d %v: %v, want an error naming %s and the bound 100000", tc.flag, tc.count, tc.env, err, tc.want)
		}
	}
	// The bound itself is a count.
	if got, ok, err := Resolve("", 0, env("RANK", "99999", "WORLD_SIZE", "100000")); err != nil || !ok || got.Count != MaxCount {
		t.Errorf("WORLD_SIZE=100000: %+v %v %v", got, ok, err)
	}
}

// An index outside its count is an error naming both variables, also for
// a count of 1 (before: JOB_COMPLETION_INDEX=3 with a task count of 1, or
// SLURM_PROCID=5 with SLURM_NTASKS=1, ran the whole job).
func TestResolveIndexOutsideCount(t *testing.T) {
	for _, tc := range []struct {
		count int
		env   []string
		want  []string
	}{
		{0, []string{"JOB_COMPLETION_INDEX", "3", "FASTER_TASK_COUNT", "1"}, []string{"JOB_COMPLETION_INDEX=3", "FASTER_TASK_COUNT=1"}},
		{1, []string{"JOB_COMPLETION_INDEX", "3"}, []string{"JOB_COMPLETION_INDEX=3", "--task-count 1"}},
		{0, []string{"SLURM_PROCID", "5", "SLURM_NTASKS", "1"}, []string{"SLURM_PROCID=5", "SLURM_NTASKS=1"}},
		{0, []string{"RANK", "0", "WORLD_SIZE", "0"}, []string{"RANK=0", "WORLD_SIZE=0"}},
		{0, []string{"OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "2"}, []string{"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2"}},
		{0, []string{"SLURM_ARRAY_TASK_ID", "7", "SLURM_ARRAY_TASK_COUNT", "1", "SLURM_ARRAY_TASK_MIN", "0"}, []string{"SLURM_ARRAY_TASK_ID=7", "SLURM_ARRAY_TASK_COUNT=1"}},
	} {
		_, ok, err := Resolve("", tc.count, env(tc.env...))
		if err == nil {
			t.Errorf("%d %v: no error (whole job: %v)", tc.count, tc.env, !ok)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d %v: %v, want it to name %q", tc.count, tc.env, err, w)
			}
		}
	}
	// The one task of one is no split, and no error.
	for _, e := range [][]string{{"JOB_COMPLETION_INDEX", "0", "FASTER_TASK_COUNT", "1"}, {"SLURM_PROCID", "0", "SLURM_NTASKS", "1"},
		{"SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "1", "SLURM_ARRAY_TASK_MIN", "5", "SLURM_ARRAY_TASK_MAX", "5"}} {
		if got, ok, err := Resolve("", 0, env(e...)); ok || err != nil {
			t.Errorf("%v: %+v %v %v, want no task", e, got, ok, err)
		}
	}
}

// A long bad value is quoted cut short: the error stays one readable line
// (before: a 1 MB RANK was printed whole).
func TestResolveQuotesLongValuesShort(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		flag string
		env  []string
		want string
	}{
		{"", []string{"RANK", long, "WORLD_SIZE", "2"}, `RANK="xxx`},
		{long, nil, `--task "xxx`},
	} {
		_, _, err := Resolve(tc.flag, 0, env(tc.env...))
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 1000 {
			t.Errorf("%.20q %.20q: %d bytes of error, want under 1000 naming %s", tc.flag, tc.env, len(fmt.Sprint(err)), tc.want)
		}
	}
}

// OrNil names a task for a report only when one was resolved (moved here
// from cmd/faster's taskOrNil, which pack's and resize's --json use).
func TestOrNil(t *testing.T) {
	if p := OrNil(Task{Index: 1, Count: 2, Source: "--task"}, true); p == nil || *p != (Task{Index: 1, Count: 2, Source: "--task"}) {
		t.Errorf("a task: %v", p)
	}
	if p := OrNil(Task{}, false); p != nil {
		t.Errorf("no task: %v", p)
	}
}

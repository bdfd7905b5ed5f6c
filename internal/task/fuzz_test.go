package task

import (
	"strings"
	"testing"
)

// FuzzResolve reads a task from any flag, --task-count and environment
// ("NAME=value" lines): it never panics, a task it returns is in range
// (0 <= index < count <= MaxCount), and an error names a flag or a
// variable that was given.
func FuzzResolve(f *testing.F) {
	f.Add("", 0, "JOB_COMPLETION_INDEX=3\nFASTER_TASK_COUNT=1")
	f.Add("", 0, "SLURM_PROCID=0\nSLURM_NTASKS=1099511627776")
	f.Add("", 0, "SLURM_ARRAY_TASK_ID=9\nSLURM_ARRAY_TASK_COUNT=3\nSLURM_ARRAY_TASK_MIN=1\nSLURM_ARRAY_TASK_MAX=9\nSLURM_ARRAY_TASK_STEP=4")
	f.Add("", 0, "SLURM_PROCID=2\nSLURM_NTASKS=3\nPMI_RANK=2\nPMI_SIZE=3\nOMPI_COMM_WORLD_RANK=2\nOMPI_COMM_WORLD_SIZE=3")
	f.Add("1/4", 4, "RANK=3\nWORLD_SIZE=8")
	f.Add("0/1099511627776", 0, "")
	f.Add("", 100001, "JOB_COMPLETION_INDEX=0")
	f.Add("", 0, "SLURM_ARRAY_TASK_ID=9223372036854775807\nSLURM_ARRAY_TASK_COUNT=2\nSLURM_ARRAY_TASK_MAX=9223372036854775807")
	f.Fuzz(func(t *testing.T, flag string, count int, environ string) {
		m := map[string]string{}
		for _, line := range strings.Split(environ, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				m[k] = v
			}
		}
		got, ok, err := Resolve(flag, count, func(k string) string { return m[k] })
		if err != nil {
			named := strings.Contains(err.Error(), "--task")
			for k := range m {
				named = named || k != "" && strings.Contains(err.Error(), k)
			}
			if !named {
				t.Fatalf("%q %d %q: %v names neither a flag nor a variable", flag, count, environ, err)
			}
			return
		}
		if !ok {
			return
		}
		if got.Index < 0 || got.Index >= got.Count || got.Count > MaxCount || got.Source == "" {
			t.Fatalf("%q %d %q: %+v out of range", flag, count, environ, got)
		}
		if flag == "" && got.Count < 2 {
			t.Fatalf("%q %d %q: %+v: one task from the environment is no split", flag, count, environ, got)
		}
	})
}

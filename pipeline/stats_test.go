package pipeline

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func sleepMap(d time.Duration) func(context.Context, int) (int, error) {
	return func(_ context.Context, x int) (int, error) {
		time.Sleep(d)
		return x, nil
	}
}

// readerSpending is a RoleIO map over n items taking 1 ms each, cpu of
// which its owner reports as CPU time.
func readerSpending(n int, cpu time.Duration) *MapDataset[int, int] {
	var spent atomic.Int64
	return ParallelMap(FromSlice(ints(n)).Named("list"), 2, func(_ context.Context, x int) (int, error) {
		time.Sleep(time.Millisecond)
		spent.Add(int64(cpu))
		return x, nil
	}).Role(RoleIO).Named("read").CPU(func() time.Duration { return time.Duration(spent.Load()) })
}

func TestVerdict(t *testing.T) {
	const n = 60
	cases := []struct {
		name  string
		build func() interface {
			Dataset[int]
			Stats() Stats
		}
		consumer   time.Duration
		saturated  bool // the process used all its processors
		bottleneck string
		stage      string
	}{
		{
			name: "io",
			build: func() interface {
				Dataset[int]
				Stats() Stats
			} {
				read := FromFunc(func(_ context.Context, i int) (int, error) {
					if i == n {
						return 0, errEOF
					}
					time.Sleep(time.Millisecond)
					return i, nil
				}).Named("read")
				return Prefetch(ParallelMap(read, 2, double).Named("decode"), 2)
			},
			bottleneck: BottleneckIO, stage: "read",
		},
		{
			name: "decode",
			build: func() interface {
				Dataset[int]
				Stats() Stats
			} {
				return Prefetch(Map(FromSlice(ints(n)).Named("read"), sleepMap(time.Millisecond)).Named("decode"), 2)
			},
			bottleneck: BottleneckDecode, stage: "decode",
		},
		{
			name: "decode-parallel",
			build: func() interface {
				Dataset[int]
				Stats() Stats
			} {
				return ParallelMap(FromSlice(ints(n)).Named("read"), 3, sleepMap(time.Millisecond)).Named("decode")
			},
			bottleneck: BottleneckDecode, stage: "decode",
		},
		{
			// A reading stage whose time is CPU work (its owner measures
			// 90% of each call on the CPU: a reader that converts) is a
			// CPU bottleneck, named as the stage it is.
			name: "reader-computing",
			build: func() interface {
				Dataset[int]
				Stats() Stats
			} {
				return Prefetch(Map(readerSpending(n, 900*time.Microsecond), double).Named("decode"), 2)
			},
			bottleneck: BottleneckDecode, stage: "read",
		},
		{
			name: "reader-waiting",
			build: func() interface {
				Dataset[int]
				Stats() Stats
			} {
				return Prefetch(Map(readerSpending(n, 100*time.Microsecond), double).Named("decode"), 2)
			},
			bottleneck: BottleneckIO, stage: "read",
		},
		{
			// The same reader, 10% of its time on the CPU, in a process
			// with no processor to spare (its CPU time and run-queue waits
			// fill GOMAXPROCS): the rest of the reader's time was spent
			// waiting for a processor, not for the storage.
			name: "reader-starved",
			build: func() interface {
				Dataset[int]
				Stats() Stats
			} {
				return Prefetch(Map(readerSpending(n, 100*time.Microsecond), double).Named("decode"), 2)
			},
			saturated:  true,
			bottleneck: BottleneckDecode, stage: "read",
		},
		{
			name: "consumer",
			build: func() interface {
				Dataset[int]
				Stats() Stats
			} {
				return Prefetch(ParallelMap(FromSlice(ints(n)).Named("read"), 2, double).Named("decode"), 2)
			},
			consumer:   time.Millisecond,
			bottleneck: BottleneckConsumer, stage: "consumer",
		},
	}
	for _, c := range cases {
		// In a synctest bubble the sleeps take exactly their duration on
		// the stages' clock and everything else takes none, so the loads
		// the verdict compares do not depend on the machine's.
		t.Run(c.name, func(t *testing.T) {
			// The process's CPU is an input: none used, or all of it.
			defer func(f func() int64) { procClock = f }(procClock)
			procClock = func() int64 { return 0 }
			if c.saturated {
				procClock = func() int64 { return nanotime() * int64(runtime.GOMAXPROCS(0)) }
			}
			synctest.Test(t, func(t *testing.T) {
				d := c.build()
				if v := d.Stats().Verdict; v.Bottleneck != BottleneckUnknown {
					t.Fatalf("before running: %+v", v)
				}
				for _, err := range d.Iter(context.Background()) {
					if err != nil {
						t.Fatal(err)
					}
					time.Sleep(c.consumer)
				}
				st := d.Stats()
				v := st.Verdict
				if v.Bottleneck != c.bottleneck || v.Stage != c.stage {
					b, _ := json.MarshalIndent(st, "", "  ")
					t.Fatalf("verdict %+v, want %s (%s)\n%s", v, c.bottleneck, c.stage, b)
				}
				// Only the limiter sleeps: it is busy all the time, the
				// others (almost) never.
				if v.BusyFraction < 0.99 || v.Factor < 100 {
					t.Fatalf("weak verdict %+v", v)
				}
				if !strings.Contains(v.Detail, c.bottleneck) {
					t.Fatalf("detail %q", v.Detail)
				}
			})
		})
	}
}

func TestStatsCounters(t *testing.T) {
	src := FromSlice(ints(100)).Named("read").Bytes(func(int) int { return 3 })
	d := Batch(Shuffle(ParallelMap(src, 2, double).Named("decode").Bytes(func(int) int { return 5 }), 8, 1), 10).Named("batch")
	for b, err := range d.Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	st := d.Stats()
	names := []string{}
	for _, s := range st.Stages {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "read,decode,shuffle,batch" {
		t.Fatalf("stages %v", names)
	}
	want := []struct{ items, bytes int64 }{{100, 300}, {100, 500}, {100, 0}, {10, 0}}
	for i, w := range want {
		s := st.Stages[i]
		if s.Items != w.items || s.Bytes != w.bytes || s.Epochs != 1 {
			t.Fatalf("%s: items %d bytes %d epochs %d, want %d %d 1", s.Name, s.Items, s.Bytes, s.Epochs, w.items, w.bytes)
		}
		if s.Wall <= 0 || s.BusyFraction < 0 || s.BusyFraction > 1 {
			t.Fatalf("%s: wall %v busy fraction %v", s.Name, s.Wall, s.BusyFraction)
		}
	}
	if st.Stages[1].Parallelism != 2 {
		t.Fatalf("parallelism %d", st.Stages[1].Parallelism)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"busy_ns"`, `"wait_input_ns"`, `"blocked_output_ns"`, `"verdict"`, `"bottleneck"`} {
		if !strings.Contains(string(b), key) {
			t.Fatalf("JSON lacks %s: %s", key, b)
		}
	}
}

// Two stages loaded within TieFactor of each other are a tie, named as
// such with both; further apart, the more loaded one is the verdict.
func TestVerdictNearTie(t *testing.T) {
	stage := func(name string, role Role, load float64) StageStats {
		return StageStats{Name: name, Role: role, Wall: time.Second, Load: load}
	}
	v := verdict([]StageStats{stage("read", RoleIO, 0.40), stage("decode", RoleCPU, 0.41)}, 0.05, 0, true)
	if !v.Tie || v.Stage != "decode" || v.Bottleneck != BottleneckDecode || v.TiedWith != BottleneckIO ||
		!strings.HasPrefix(v.Detail, "near tie (1.02x, under 1.1x): decode (stage \"decode\" busy 41%) and io (stage \"read\" busy 40%)") {
		t.Fatalf("near tie: %+v", v)
	}
	v = verdict([]StageStats{stage("read", RoleIO, 0.30), stage("decode", RoleCPU, 0.41)}, 0.05, 0, true)
	if v.Tie || v.TiedWith != "" || v.Bottleneck != BottleneckDecode || !strings.Contains(v.Detail, "1.4x the next (read)") {
		t.Fatalf("clear winner: %+v", v)
	}
	// The consumer within 10% of a stage: a tie too.
	v = verdict([]StageStats{stage("read", RoleIO, 0.10), stage("decode", RoleCPU, 0.85)}, 0.90, 0, true)
	if !v.Tie || v.Bottleneck != BottleneckConsumer || v.TiedWith != BottleneckDecode {
		t.Fatalf("consumer tie: %+v", v)
	}
}

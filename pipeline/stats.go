package pipeline

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Role says what kind of resource a stage's busy time spends, for the
// bottleneck verdict.
type Role string

const (
	// RoleIO is a stage that reads: sources, file listings, Interleave.
	RoleIO Role = "io"
	// RoleCPU is a stage that computes: Map, ParallelMap, Batch, Shuffle.
	RoleCPU Role = "cpu"
	// RoleNone is a stage whose own work is negligible (Prefetch, Take, Skip,
	// Shard, Repeat); it never limits throughput in the verdict.
	RoleNone Role = ""
)

// Bottleneck names of Verdict.Bottleneck.
const (
	BottleneckIO       = "io"       // a RoleIO stage limits throughput
	BottleneckDecode   = "decode"   // CPU work limits throughput: a RoleCPU stage, or a stage of another role busy mostly on the CPU (see StageStats.CPU)
	BottleneckConsumer = "consumer" // the consumer limits: stages wait on it
	BottleneckUnknown  = "unknown"  // nothing has run yet
)

// StageStats is a snapshot of one stage's counters. Times are summed over
// the stage's goroutines: a parallel stage can be busy for longer than its
// wall time.
type StageStats struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Role Role   `json:"role,omitempty"`
	// Epochs counts the epochs started (Iter sequences ranged).
	Epochs int64 `json:"epochs"`
	// Items counts elements the stage yielded downstream; Bytes sums the
	// stage's size function over them (0 without one).
	Items int64 `json:"items"`
	Bytes int64 `json:"bytes"`
	// Parallelism is the stage's current number of workers (1 for a
	// synchronous stage).
	Parallelism int `json:"parallelism"`
	// Wall is the time the stage had an epoch running.
	Wall time.Duration `json:"wall_ns"`
	// Busy is time spent on the stage's own work (reading, the map function,
	// filling batches), summed over workers.
	Busy time.Duration `json:"busy_ns"`
	// CPU is the part of Busy spent computing, where the stage's owner
	// measures it (a Map's or an Interleave's CPU option: the thread CPU
	// time around each call), else 0. The verdict counts a RoleIO stage
	// whose busy time is mostly CPU as CPU work: a reader that parses,
	// converts or checksums is limited by the processor, not the storage.
	CPU time.Duration `json:"cpu_ns,omitempty"`
	// WaitInput is time the stage's output side waited for its input: for a
	// synchronous stage, the time its upstream took to produce; for an
	// asynchronous one, the time its consumer waited on an empty queue.
	WaitInput time.Duration `json:"wait_input_ns"`
	// BlockedOutput is time the stage waited for downstream to take an
	// element: the time spent in downstream's loop body. For the last stage
	// of a pipeline this is the consumer's own time.
	BlockedOutput time.Duration `json:"blocked_output_ns"`
	// BusyFraction is Busy divided by the capacity the stage had, that is
	// its wall time multiplied by its parallelism (integrated over time, as
	// autotuning changes the parallelism). 1 means always busy.
	BusyFraction float64 `json:"busy_fraction"`
	// Load is Busy divided by the capacity the stage would have had had it
	// run for the whole epoch as the last stage saw it (its average
	// parallelism times the last stage's wall time). Unlike BusyFraction it
	// does not flatter a stage that finished its work early (a reader whose
	// whole input fits a shuffle buffer); the verdict compares Loads.
	Load     float64 `json:"load"`
	capacity float64
}

// Stats is a snapshot of a pipeline's counters, upstream stages first, and
// the verdict drawn from them. It marshals to JSON as is.
type Stats struct {
	Stages []StageStats `json:"stages"`
	// ConsumerFraction is the share of the last stage's wall time spent in
	// the consumer's loop body.
	ConsumerFraction float64 `json:"consumer_fraction"`
	// CPUFraction is the CPU the process used or waited for on a run
	// queue while the last stage ran, over the GOMAXPROCS processors of that
	// time (Linux; 0 elsewhere): at 0.9 or more the process had no processor
	// to spare, and time a reading stage spent neither on the CPU nor
	// elsewhere was spent waiting for one.
	CPUFraction float64 `json:"cpu_fraction,omitempty"`
	Verdict     Verdict `json:"verdict"`
}

// cpuSaturated is the CPUFraction from which the process is taken to have
// had no processor to spare.
const cpuSaturated = 0.9

// Verdict names what limits a pipeline's throughput.
type Verdict struct {
	// Bottleneck is one of BottleneckIO, BottleneckDecode,
	// BottleneckConsumer or BottleneckUnknown.
	Bottleneck string `json:"bottleneck"`
	// Stage is the limiting stage's name ("consumer" for the consumer).
	Stage string `json:"stage"`
	// BusyFraction is the limiter's busy fraction (ConsumerFraction for the
	// consumer).
	BusyFraction float64 `json:"busy_fraction"`
	// RunnerUp is the next most loaded stage (or "consumer"), and Factor is
	// how many times more loaded the limiter is (its busy fraction divided by
	// the runner-up's, capped at 1000).
	RunnerUp string  `json:"runner_up,omitempty"`
	Factor   float64 `json:"factor"`
	// Tie is set when the runner-up is within TieFactor of the limiter:
	// the measurement cannot tell them apart (a busy machine moves the
	// loads more than that), and either may limit. TiedWith is then the
	// runner-up's bottleneck (BottleneckIO, …), which may be the same.
	Tie      bool   `json:"tie,omitempty"`
	TiedWith string `json:"tied_with,omitempty"`
	// Detail says the same in one line for people.
	Detail string `json:"detail"`
}

// base lets Stats walk from a stage to its inputs through any Dataset value
// built by this package.
type node interface{ base() *stage }

// stage holds what every stage shares: its name, the graph edge to its
// inputs, a configuration error, and the counters. It is embedded by value
// in every stage type, which also gives those types their Stats method.
type stage struct {
	name string
	kind string
	role Role
	err  error // configuration error yielded by Iter
	up   []*stage
	// cpu, when set, returns the CPU time the stage's work has spent so
	// far (StageStats.CPU).
	cpu func() time.Duration
	// recordShard is set on a FileList that has fewer files than shards: the
	// Interleave reading it must shard its records instead.
	recordShard func() (n, i int, ok bool)

	epochs, items, bytes     atomic.Int64
	busy, waitIn, blockedOut atomic.Int64

	mu       sync.Mutex
	running  int
	since    int64 // start of the open interval while running > 0
	wall     int64 // closed intervals
	capacity int64 // closed ∫ parallelism dt
	par      int
	proc0    int64 // procClock at the start of the open interval
	proc     int64 // procClock's advance over the closed intervals
}

// procClock is the process's CPU time plus its threads' run-queue waits
// (processCPU); tests replace it.
var procClock = processCPU

func (s *stage) base() *stage { return s }

func (s *stage) init(kind string, role Role, inputs ...any) {
	s.name, s.kind, s.role, s.par = kind, kind, role, 1
	s.up = s.up[:0]
	for _, in := range inputs {
		if n, ok := in.(node); ok {
			s.up = append(s.up, n.base())
		}
	}
}

// begin marks an epoch as running and returns its start time. It counts
// the epoch for Stats only: what a stage yields depends on the epoch its
// context names (EpochFrom), never on this count.
func (s *stage) begin() (start int64) {
	start = nanotime()
	s.mu.Lock()
	if s.running == 0 {
		s.since = start
		s.proc0 = procClock()
	}
	s.running++
	s.mu.Unlock()
	s.epochs.Add(1)
	return start
}

func (s *stage) end() {
	t := nanotime()
	s.mu.Lock()
	s.running--
	if s.running == 0 {
		d := t - s.since
		s.wall += d
		s.capacity += d * int64(s.par)
		s.proc += procClock() - s.proc0
	}
	s.mu.Unlock()
}

// setPar records a change of the stage's parallelism.
func (s *stage) setPar(p int) {
	t := nanotime()
	s.mu.Lock()
	if s.running > 0 {
		d := t - s.since
		s.wall += d
		s.capacity += d * int64(s.par)
		s.since = t
	}
	s.par = p
	s.mu.Unlock()
}

// snapshot returns the stage's counters; with proc, also the process's
// CPU over the stage's running time.
func (s *stage) snapshot(proc bool) (StageStats, int64) {
	t := nanotime()
	s.mu.Lock()
	wall, capacity, par, pcpu := s.wall, s.capacity, s.par, s.proc
	if s.running > 0 {
		d := t - s.since
		wall += d
		capacity += d * int64(par)
		if proc {
			pcpu += procClock() - s.proc0
		}
	}
	s.mu.Unlock()
	st := StageStats{
		Name: s.name, Kind: s.kind, Role: s.role,
		Epochs: s.epochs.Load(), Items: s.items.Load(), Bytes: s.bytes.Load(),
		Parallelism:   par,
		Wall:          time.Duration(wall),
		Busy:          time.Duration(s.busy.Load()),
		WaitInput:     time.Duration(s.waitIn.Load()),
		BlockedOutput: time.Duration(s.blockedOut.Load()),
	}
	if s.cpu != nil {
		st.CPU = min(max(s.cpu(), 0), st.Busy)
	}
	if capacity > 0 {
		st.BusyFraction = math.Min(1, float64(st.Busy)/float64(capacity))
	}
	st.capacity = float64(capacity)
	return st, pcpu
}

// Stats returns a snapshot of the counters of this stage and of every stage
// upstream of it that this package built, upstream first, and the verdict.
// It is safe to call while an epoch runs. The stage it is called on is
// taken to be the last one: its BlockedOutput is the consumer's time.
func (s *stage) Stats() Stats {
	var order []*stage
	seen := map[*stage]bool{}
	var visit func(*stage)
	visit = func(n *stage) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, u := range n.up {
			visit(u)
		}
		order = append(order, n)
	}
	visit(s)
	st := Stats{Stages: make([]StageStats, len(order))}
	var proc int64
	for i, n := range order {
		st.Stages[i], proc = n.snapshot(i == len(order)-1)
	}
	last := st.Stages[len(st.Stages)-1]
	if last.Wall > 0 {
		st.CPUFraction = float64(proc) / (float64(last.Wall) * float64(runtime.GOMAXPROCS(0)))
	}
	for i := range st.Stages {
		n := &st.Stages[i]
		if n.Wall > 0 && last.Wall > 0 {
			avgPar := n.capacity / float64(n.Wall)
			n.Load = math.Min(1, float64(n.Busy)/(avgPar*float64(max(last.Wall, n.Wall))))
		}
	}
	if last.Wall > 0 {
		st.ConsumerFraction = math.Min(1, float64(last.BlockedOutput)/float64(last.Wall))
	}
	st.Verdict = verdict(st.Stages, st.ConsumerFraction, st.CPUFraction, last.Wall > 0)
	return st
}

// TieFactor is the ratio of the two most loaded stages' busy fractions
// below which a verdict reports a near tie rather than a winner.
const TieFactor = 1.1

// verdict picks the most loaded of the stages that do work and the consumer.
func verdict(stages []StageStats, consumer, cpuFrac float64, ran bool) Verdict {
	if !ran {
		return Verdict{Bottleneck: BottleneckUnknown, Detail: "no epoch has run"}
	}
	type cand struct {
		name, bottleneck string
		frac             float64
		note             string
	}
	cands := []cand{{"consumer", BottleneckConsumer, consumer, ""}}
	for _, s := range stages {
		if s.Role == RoleNone || s.Wall == 0 {
			continue
		}
		b, note := BottleneckDecode, ""
		if s.Role == RoleIO {
			b = BottleneckIO
			if s.Busy > 0 && s.CPU > 0 {
				// A reader's time on the CPU is CPU work: it is not waiting
				// on the storage. Nor is its time waiting for a processor
				// (preempted, or runnable behind other work) when the
				// process had none to spare.
				share := float64(s.CPU) / float64(s.Busy)
				note = fmt.Sprintf(" (%.0f%% of it on the CPU)", 100*share)
				if share >= 0.5 {
					b = BottleneckDecode
				} else if cpuFrac >= cpuSaturated {
					b = BottleneckDecode
					note = fmt.Sprintf(" (%.0f%% of it on the CPU, the rest waiting for a processor: the process's CPU time and run-queue waits filled %.0f%% of GOMAXPROCS=%d)",
						100*share, 100*min(cpuFrac, 1), runtime.GOMAXPROCS(0))
				}
			}
		}
		cands = append(cands, cand{s.Name, b, s.Load, note})
	}
	best, second := -1, -1
	for i, c := range cands {
		switch {
		case best < 0 || c.frac > cands[best].frac:
			best, second = i, best
		case second < 0 || c.frac > cands[second].frac:
			second = i
		}
	}
	b := cands[best]
	v := Verdict{Bottleneck: b.bottleneck, Stage: b.name, BusyFraction: b.frac, Factor: 1000}
	if second >= 0 {
		r := cands[second]
		v.RunnerUp = r.name
		if r.frac > b.frac/1000 {
			v.Factor = b.frac / r.frac
		}
		if v.Factor < TieFactor && b.frac > 0 {
			v.Tie, v.TiedWith = true, r.bottleneck
			what := func(c cand) string {
				if c.bottleneck == BottleneckConsumer {
					return fmt.Sprintf("the consumer (%.0f%% of the time)", 100*c.frac)
				}
				return fmt.Sprintf("%s (stage %q busy %.0f%%%s)", c.bottleneck, c.name, 100*c.frac, c.note)
			}
			v.Detail = fmt.Sprintf("near tie (%.2fx, under %.1fx): %s and %s; either may limit", v.Factor, TieFactor, what(b), what(r))
			return v
		}
	}
	switch {
	case b.bottleneck == BottleneckConsumer:
		v.Detail = fmt.Sprintf("consumer: the loop body took %.0f%% of the time", 100*b.frac)
	default:
		v.Detail = fmt.Sprintf("%s: stage %q busy %.0f%% of the run%s", b.bottleneck, b.name, 100*b.frac, b.note)
	}
	if v.RunnerUp != "" {
		v.Detail += fmt.Sprintf(", %.1fx the next (%s)", v.Factor, v.RunnerUp)
	}
	return v
}

var clockBase = time.Now()

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(clockBase)) }

// meter accumulates one goroutine's counters locally and adds them to the
// stage every few items, so parallel workers do not contend on the atomics.
type meter struct {
	s                        *stage
	items, bytes             int64
	busy, waitIn, blockedOut int64
	n                        int
}

// emit counts x (and its bytes, with size), hands it to the consumer, and
// charges the time the consumer took to blockedOut. t1 is when x was
// ready; emit returns the time the consumer returned, and false when it
// stopped the epoch.
func emit[T any](m *meter, yield func(T, error) bool, x T, size func(T) int, t1 int64) (int64, bool) {
	if size != nil {
		m.bytes += int64(size(x))
	}
	m.items++
	if !yield(x, nil) {
		return 0, false
	}
	last := nanotime()
	m.blockedOut += last - t1
	m.tick()
	return last, true
}

func (m *meter) tick() {
	m.n++
	if m.n&31 == 0 {
		m.flush()
	}
}

func (m *meter) flush() {
	s := m.s
	if m.items != 0 {
		s.items.Add(m.items)
	}
	if m.bytes != 0 {
		s.bytes.Add(m.bytes)
	}
	if m.busy != 0 {
		s.busy.Add(m.busy)
	}
	if m.waitIn != 0 {
		s.waitIn.Add(m.waitIn)
	}
	if m.blockedOut != 0 {
		s.blockedOut.Add(m.blockedOut)
	}
	m.items, m.bytes, m.busy, m.waitIn, m.blockedOut = 0, 0, 0, 0, 0
}

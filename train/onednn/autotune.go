//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

// #include "shim.h"
import "C"

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faster-training/faster/train"
)

// convAlgo is one way to run a convolution: oneDNN's algorithm and the
// layout of the activations (source, destination and their gradients).
// Weights always take the layout the primitive prefers.
type convAlgo struct {
	alg C.dnnl_alg_kind_t
	tag C.dnnl_format_tag_t // dnnl_format_tag_any: the primitive's (blocked) choice
}

// defaultConvAlgo is what the backend runs without autotuning where
// Winograd does not apply (conv.defaultAlgo).
var defaultConvAlgo = convAlgo{C.dnnl_convolution_direct, C.dnnl_format_tag_any}

// winogradConvAlgo is the default of the convolutions Winograd serves.
var winogradConvAlgo = convAlgo{C.dnnl_convolution_winograd, C.dnnl_format_tag_any}

// convAlgos are the candidates autotuning times; the default comes first.
var convAlgos = func() []convAlgo {
	var as []convAlgo
	for _, alg := range []C.dnnl_alg_kind_t{C.dnnl_convolution_direct, C.dnnl_convolution_winograd, C.dnnl_convolution_auto} {
		for _, tag := range []C.dnnl_format_tag_t{C.dnnl_format_tag_any, C.dnnl_nhwc, C.dnnl_nchw} {
			as = append(as, convAlgo{alg, tag})
		}
	}
	return as
}()

func (a convAlgo) String() string {
	alg := map[C.dnnl_alg_kind_t]string{C.dnnl_convolution_direct: "direct", C.dnnl_convolution_winograd: "winograd",
		C.dnnl_convolution_auto: "auto"}[a.alg]
	tag := map[C.dnnl_format_tag_t]string{C.dnnl_format_tag_any: "blocked", C.dnnl_nhwc: "nhwc", C.dnnl_nchw: "nchw"}[a.tag]
	return alg + "/" + tag
}

// tuner times the candidate implementations of an op the first time the
// backend sees its shape and input layout, and remembers the fastest for
// every op of that configuration (torch.backends.cudnn.benchmark).
type tuner struct {
	mu      sync.Mutex
	chosen  map[string]convAlgo
	choices []train.TuneChoice
	// cache keeps choices across runs (nil: none); prec is part of its
	// keys.
	cache *train.TuneCache
	prec  train.Precision
}

// MachineKey describes what a tuning choice depends on besides the op:
// oneDNN's version, the architecture, the CPU's model and instruction
// sets, and what oneDNN dispatches on: its effective ISA (lowered by
// DNNL_MAX_CPU_ISA), the ISA hints and the default floating-point math
// mode. Choices kept in a train.TuneCache are served only to the same
// key, and checked when served (tuner.cached).
func MachineKey() string {
	v := C.dnnl_version()
	key := fmt.Sprintf("onednn %d.%d.%d %s", v.major, v.minor, v.patch, runtime.GOARCH)
	model, flags := cpuInfo()
	if model != "" {
		key += " " + model
	}
	for _, f := range []string{"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile", "avx512_fp16"} {
		if slices.Contains(flags, f) {
			key += " " + f
		}
	}
	key += " isa " + C.GoString(C.dnnl_cpu_isa2str(C.dnnl_get_effective_cpu_isa()))
	if h := os.Getenv("DNNL_CPU_ISA_HINTS"); h != "" {
		key += " hints " + h
	}
	var mode C.dnnl_fpmath_mode_t
	if C.dnnl_get_default_fpmath_mode(&mode) == C.dnnl_success && mode != C.dnnl_fpmath_mode_strict {
		key += " fpmath " + C.GoString(C.dnnl_fpmath_mode2str(mode))
	}
	return key
}

// cpuInfo reads the first processor's model name and flags from
// /proc/cpuinfo (empty where there is none).
func cpuInfo() (model string, flags []string) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "", nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "flags":
			if flags == nil {
				flags = strings.Fields(v)
			}
		}
		if model != "" && flags != nil {
			break
		}
	}
	return model, flags
}

// TuneChoices implements train.Tuner (empty without autotuning).
func (b *Backend) TuneChoices() []train.TuneChoice {
	if b.tune == nil {
		return nil
	}
	b.tune.mu.Lock()
	defer b.tune.mu.Unlock()
	out := make([]train.TuneChoice, len(b.tune.choices))
	for i, c := range b.tune.choices {
		c.Candidates = append([]train.TuneCandidate(nil), c.Candidates...)
		out[i] = c
	}
	return out
}

// Autotuning keeps the default unless a candidate is this much faster:
// timing noise must not swap implementations that are as fast, and a
// candidate with another activation layout also changes what the layers
// around it run on (a ReLU and BatchNorm in that layout, a reorder before
// the next convolution), which its timing only partly sees. With a 3%
// margin a whole ThinNet epoch ran 15% slower with autotuning than without
// (tuning time excluded); the default stays unless clearly beaten.
const tuneMargin = 0.90

// shared holds the choices made in this process, by configuration and
// thread count, so that data-parallel replicas (backends of the same
// threads seeing the same shapes) tune once: a replica that finds a
// configuration being tuned waits for the result.
var shared = struct {
	sync.Mutex
	chosen map[string]sharedChoice
}{chosen: map[string]sharedChoice{}}

type sharedChoice struct {
	algo   convAlgo
	choice train.TuneChoice
}

// tuneRounds is how many times each candidate is timed after its warm-up.
const tuneRounds = 3

// conv returns the algorithm for c on input x (weights w, bias b), timing
// the candidates on x when this configuration is new. Each candidate runs
// forward, backward-weights and backward-data once to warm up (creating
// its primitives), then the candidates are timed in turn, tuneRounds
// times, so that a burst of other load on shared cores hits all of them
// alike; a candidate's best time counts. One more than twice as slow as
// the best after a round is not run again.
func (t *tuner) conv(c *conv, x *tensor, w, b []float32) convAlgo {
	key := fmt.Sprintf("%+v %v %v ", c.spec, x.shape, c.num) + mdKey(&x.m.md)
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.chosen[key]; ok {
		return a
	}
	// One configuration is tuned at a time in a process: the timings do
	// not compete with another replica's, and the replicas share them.
	skey := fmt.Sprintf("%s threads %d", key, c.s.threads)
	shared.Lock()
	defer shared.Unlock()
	if sc, ok := shared.chosen[skey]; ok {
		sc.choice.Seconds = 0 // chosen by another backend of this process
		t.chosen[key] = sc.algo
		t.choices = append(t.choices, sc.choice)
		return sc.algo
	}
	// The file's key: the configuration's bytes (a memory descriptor's
	// included) hashed, as JSON keeps text only.
	// The default is part of it: a candidate must beat it by tuneMargin.
	sum := sha256.Sum256([]byte(skey + " " + t.prec.String() + " default " + c.defaultAlgo().String()))
	ckey := hex.EncodeToString(sum[:16])
	if t.cache != nil {
		if ch, ok := t.cache.Lookup(ckey); ok {
			if a, ok := t.cached(c, x, ckey, ch); ok {
				ch.Seconds, ch.Cached = 0, true
				t.chosen[key] = a
				t.choices = append(t.choices, ch)
				shared.chosen[skey] = sharedChoice{a, ch}
				return a
			}
		}
	}
	start := time.Now()
	shape := make([]string, len(x.shape))
	for i, d := range x.shape {
		shape[i] = fmt.Sprint(d)
	}
	op := fmt.Sprintf("conv %s -> %d k%d s%d p%d", strings.Join(shape, "x"), c.spec.Out, c.spec.Kernel, max(c.spec.Stride, 1), c.spec.Pad)
	if c.spec.Bias {
		op += " bias"
	}
	choice := train.TuneChoice{Op: op + " (input " + layoutName(&x.m.md) + ")"}
	dw := make([]float32, len(w))
	var db []float32
	if b != nil {
		db = make([]float32, len(b))
	}
	type candidate struct {
		algo   convAlgo
		op     *conv
		best   float64 // +Inf: not timed yet
		failed bool
	}
	var live []*candidate
	var dyDefault *tensor
	def := c.defaultAlgo()
	seen := map[string]string{} // implementations and layouts warmed up, to their candidate
	for _, a := range convAlgos {
		cand := &conv{s: c.s, spec: c.spec, num: c.num, algo: a, winograd: c.winograd}
		name, err := cand.warmUp(x, dyDefault, w, b, dw, db, seen)
		choice.Candidates = append(choice.Candidates, train.TuneCandidate{Name: name})
		if err != nil {
			choice.Candidates[len(choice.Candidates)-1].Err = err.Error()
			cand.Close()
			continue
		}
		live = append(live, &candidate{algo: a, op: cand, best: math.Inf(1)})
		if a == def && dyDefault == nil {
			// The output gradient every candidate is timed with comes in
			// the default's layout, as the layer after it would send it,
			// so a candidate with another layout pays for its reorder.
			y := cand.y
			if dyDefault, err = newTensor(c.s, y.shape, y.m.md); err == nil {
				n := int(mdSize(&y.m.md) / 4)
				copy(dyDefault.m.floats(n), y.m.floats(n))
				defer dyDefault.Release()
			}
		}
	}
	fastest := math.Inf(1)
	for range tuneRounds {
		for _, k := range live {
			if k.failed || (!math.IsInf(k.best, 1) && k.best > 2*fastest) {
				continue
			}
			secs, err := k.op.run(x, dyDefault, w, b, dw, db)
			if err != nil { // it ran in the warm-up: not expected
				k.failed = true
				continue
			}
			k.best = min(k.best, secs)
			fastest = min(fastest, k.best)
		}
	}
	best, bestSecs, defaultSecs := def, math.Inf(1), math.Inf(1)
	for _, k := range live {
		k.op.Close()
		i := slices.Index(convAlgos, k.algo)
		if k.failed {
			choice.Candidates[i].Err = "failed after its warm-up"
			continue
		}
		choice.Candidates[i].Seconds = k.best
		if k.algo == def {
			defaultSecs = k.best
		}
		if k.best < bestSecs {
			best, bestSecs = k.algo, k.best
		}
	}
	if bestSecs > tuneMargin*defaultSecs && !math.IsInf(defaultSecs, 1) {
		best = def
	}
	choice.Chosen = choice.Candidates[slices.Index(convAlgos, best)].Name
	t.chosen[key] = best
	choice.Seconds = time.Since(start).Seconds()
	t.choices = append(t.choices, choice)
	shared.chosen[skey] = sharedChoice{best, choice}
	if t.cache != nil {
		t.cache.Record(ckey, choice) // written when the backend closes
	}
	return best
}

// warnings receives the tuner's notes (a test's buffer in tests).
var warnings io.Writer = os.Stderr

// cached checks a choice kept in the tune cache for c on x before it is
// served: it names one of the candidates (convAlgos, in order), builds
// here, and runs the implementations it names. oneDNN may dispatch
// otherwise than when it was made (another ISA, library build or
// setting the machine key missed): then it is dropped, with a note naming
// the cache file, and the configuration is tuned again.
func (t *tuner) cached(c *conv, x *tensor, ckey string, ch train.TuneChoice) (convAlgo, bool) {
	a, ok := cachedAlgo(ch)
	problem := "names no candidate of this build"
	if ok {
		cand := &conv{s: c.s, spec: c.spec, num: c.num, algo: a, winograd: c.winograd}
		err := cand.setupAlgo(x)
		if err == nil {
			err = cand.setupBackwardData()
		}
		name := ""
		if err == nil {
			name = cand.name()
		}
		cand.Close()
		switch {
		case err != nil:
			problem = fmt.Sprintf("does not build here (%v)", err)
		case name != ch.Chosen:
			problem = fmt.Sprintf("runs other kernels here (%s)", name)
		default:
			return a, true
		}
	}
	fmt.Fprintf(warnings, "faster: autotune: %s: the kept choice for %s, %s, %s: tuning it again\n", t.cache.Path(), ch.Op, ch.Chosen, problem)
	t.cache.Drop(ckey)
	return convAlgo{}, false
}

// flush writes the choices made since the last flush to the tune cache,
// warning (never failing) when it cannot.
func (t *tuner) flush() {
	if t == nil || t.cache == nil {
		return
	}
	if err := t.cache.Flush(); err != nil {
		fmt.Fprintf(warnings, "faster: %v\n", err)
	}
}

// cachedAlgo is the candidate a kept choice names: its Candidates are
// convAlgos' in order (another order is another build's: not used).
func cachedAlgo(ch train.TuneChoice) (convAlgo, bool) {
	if len(ch.Candidates) != len(convAlgos) {
		return convAlgo{}, false
	}
	for i, c := range ch.Candidates {
		if c.Name == ch.Chosen && c.Err == "" && strings.HasPrefix(c.Name, convAlgos[i].String()+" ") {
			return convAlgos[i], true
		}
	}
	return convAlgo{}, false
}

// name is c's algorithm with the implementations oneDNN picked for its
// primitives (created: forward, backward weights and backward data), as
// a choice names it.
func (c *conv) name() string {
	impls := []string{c.fwd.impl()}
	for _, p := range []*prim{c.bwdW, c.bwdD} {
		if s := p.impl(); s != impls[len(impls)-1] {
			impls = append(impls, s)
		}
	}
	return c.algo.String() + " (" + strings.Join(impls, ", ") + ")"
}

// run times one forward, backward-weights and backward-data of c on x,
// with dy as the output gradient (nil: its own output serves).
func (c *conv) run(x, dy *tensor, w, b, dw, db []float32) (float64, error) {
	start := time.Now()
	y, err := c.Forward(x, w, b)
	if err != nil {
		return 0, err
	}
	var g train.Tensor = y
	if dy != nil {
		g = dy
	}
	if _, err = c.Backward(g, w, dw, db, true); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// warmUp runs c (a candidate made for timing) once on x, creating its
// primitives, and returns its name with the implementations oneDNN picked.
// A candidate that oneDNN resolves to the same implementations and layouts
// as one in seen (dnnl_convolution_auto does) is not worth timing: it
// returns an error naming the first.
func (c *conv) warmUp(x, dy *tensor, w, b, dw, db []float32, seen map[string]string) (string, error) {
	if _, err := c.run(x, dy, w, b, dw, db); err != nil {
		return c.algo.String(), err
	}
	name := c.name()
	var sig strings.Builder
	for _, p := range []*prim{c.fwd, c.bwdW, c.bwdD} {
		sig.WriteString(p.impl())
		for _, a := range []C.int{argSrc, argWeights, argDst, argDiffSrc, argDiffWeights, argDiffDst} {
			md := p.md(a)
			sig.WriteString(mdKey(&md))
		}
	}
	if first, ok := seen[sig.String()]; ok {
		return name, fmt.Errorf("same implementation as %s", first)
	}
	seen[sig.String()] = name
	return name, nil
}

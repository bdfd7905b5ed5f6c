package traintest

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// RunAutotune checks BackendOptions.Autotune on the backend open makes:
// the backend is a train.Tuner; convolution cases, residual blocks and a
// small ThinNet give the same outputs and gradients as without autotuning;
// every choice names a candidate that ran; a shape seen before is not
// tuned again. The reference backend, which has nothing to tune, must
// accept the option and report no choices.
func RunAutotune(t *testing.T, open func(train.BackendOptions) (train.Backend, error)) {
	tuned := must(open(train.BackendOptions{Threads: 2, Autotune: true}))
	defer tuned.Close()
	plain := must(open(train.BackendOptions{Threads: 2}))
	defer plain.Close()
	tn, ok := tuned.(train.Tuner)
	if !ok {
		t.Fatalf("%s backend does not implement train.Tuner", tuned.Name())
	}
	for _, c := range Cases {
		if !strings.HasPrefix(c.Name, "conv") && !strings.HasPrefix(c.Name, "residual") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			x := make([]float32, train.Numel(c.In))
			randomise(x, rand.New(rand.NewPCG(13, uint64(len(c.Name)))), -1, 1)
			var r []float32
			got, l, xt := forwardBackward(t, tuned, c, x, &r)
			l.Close()
			xt.Release()
			want, l, xt := forwardBackward(t, plain, c, x, &r)
			l.Close()
			xt.Release()
			compare(t, got, want, 1e-4)
		})
	}
	t.Run("thinnet", func(t *testing.T) {
		cfg := train.ThinNetConfig{Filters: []int{8, 16}, Blocks: []int{1, 1}}
		step := func(b train.Backend) (logits []float32, grads [][]float32) {
			net := must(train.NewThinNet(b, cfg, 3))
			defer net.Close()
			xs := make([]float32, 4*12*12)
			randomise(xs, rand.New(rand.NewPCG(5, 5)), -1, 1)
			x := tensor(t, b, []int{4, 1, 12, 12}, xs)
			defer x.Release()
			y := must(net.Forward(x, true))
			logits = read(t, y)
			ce := train.NewCrossEntropy(b)
			defer ce.Close()
			_, dl, err := ce.Forward(y, []int{3, 7, 0, 9}, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := net.Backward(dl, false); err != nil {
				t.Fatal(err)
			}
			for _, p := range net.Params() {
				grads = append(grads, slices.Clone(p.Grad))
			}
			return logits, grads
		}
		gl, gg := step(tuned)
		before := len(tn.TuneChoices())
		step(tuned) // the same shapes: nothing new to tune
		if after := len(tn.TuneChoices()); after != before {
			t.Errorf("a second step on the same shapes made %d more tuning choices", after-before)
		}
		wl, wg := step(plain)
		closeTo(t, "logits", gl, wl, 1e-4)
		for i := range wg {
			closeTo(t, "grad", gg[i], wg[i], 1e-3)
		}
	})
	choices := tn.TuneChoices()
	if tuned.Name() == "reference" {
		if len(choices) != 0 {
			t.Errorf("reference backend made tuning choices: %+v", choices)
		}
		return
	}
	if len(choices) == 0 {
		t.Fatal("no tuning choices")
	}
	for _, c := range choices {
		i := slices.IndexFunc(c.Candidates, func(k train.TuneCandidate) bool { return k.Name == c.Chosen })
		switch {
		case c.Op == "":
			t.Errorf("choice without an op: %+v", c)
		case i < 0:
			t.Errorf("%s: chose %q, not a candidate (%+v)", c.Op, c.Chosen, c.Candidates)
		case c.Candidates[i].Err != "" || c.Candidates[i].Seconds <= 0:
			t.Errorf("%s: chose %q, which did not run: %+v", c.Op, c.Chosen, c.Candidates[i])
		}
		for _, k := range c.Candidates {
			if k.Err == "" && !(k.Seconds > 0 && k.Seconds < 1e3) {
				t.Errorf("%s: candidate %q ran in %v s", c.Op, k.Name, k.Seconds)
			}
		}
		t.Logf("%s: %s", c.Op, c.Chosen)
	}
	if tn, ok := plain.(train.Tuner); ok && len(tn.TuneChoices()) != 0 {
		t.Errorf("a backend without Autotune made tuning choices")
	}
}

// compare checks two runs of a case against each other.
func compare(t *testing.T, got, want run, tol float64) {
	t.Helper()
	closeTo(t, "y", got.y, want.y, tol)
	closeTo(t, "dx", got.dx, want.dx, tol)
	for i := range want.grads {
		closeTo(t, "grad", got.grads[i], want.grads[i], tol)
	}
}

package train_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/faster-training/faster/train"
)

// recipe.json holds PyTorch's values for each part of the fast recipe that
// PyTorch defines; testdata/gen_recipe.py writes it with torch 1.13.
//
//go:embed testdata/recipe.json
var recipeJSON []byte

type recipeRef struct {
	OneCycle []struct {
		MaxLR          float64   `json:"max_lr"`
		TotalSteps     int       `json:"total_steps"`
		PctStart       float64   `json:"pct_start"`
		DivFactor      float64   `json:"div_factor"`
		FinalDivFactor float64   `json:"final_div_factor"`
		LRs            []float64 `json:"lrs"`
	} `json:"onecycle"`
	LabelSmoothing struct {
		Eps    float64   `json:"eps"`
		N      int       `json:"n"`
		K      int       `json:"k"`
		Logits []float32 `json:"logits"`
		Labels []int     `json:"labels"`
		Loss   float64   `json:"loss"`
		Grad   []float32 `json:"grad"`
	} `json:"label_smoothing"`
	Nesterov struct {
		Momentum    float32     `json:"momentum"`
		WeightDecay float32     `json:"weight_decay"`
		Init        []float32   `json:"init"`
		LRs         []float64   `json:"lrs"`
		Grads       [][]float32 `json:"grads"`
		After       [][]float32 `json:"after"`
	} `json:"nesterov"`
	EMA       emaCase `json:"ema"`
	EMAWarmup emaCase `json:"ema_warmup"`
	Resize    struct {
		N, C, H, W, OH, OW int
		X, Y               []float32
	} `json:"resize"`
}

type emaCase struct {
	Decay    float64 `json:"decay"`
	Models   []emaRef
	Averaged []emaRef
}

type emaRef struct {
	Params  []float32 `json:"params"`
	Buffers []float32 `json:"buffers"`
}

func loadRecipe(t *testing.T) recipeRef {
	t.Helper()
	var r recipeRef
	if err := json.Unmarshal(recipeJSON, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, PyTorch %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*math.Max(1, math.Abs(float64(want[i]))) {
			t.Errorf("%s[%d] = %g, PyTorch %g", what, i, got[i], want[i])
		}
	}
}

// The one-cycle rate of every step equals torch's OneCycleLR, as the
// trainer asks for it (at the end of step k of an epoch of S steps).
func TestOneCycleMatchesTorch(t *testing.T) {
	for _, c := range loadRecipe(t).OneCycle {
		t.Run(fmt.Sprintf("steps%d", c.TotalSteps), func(t *testing.T) {
			// Epochs of 5 steps, as the trainer sees them (the last may
			// run past the cycle's end; torch stops at TotalSteps).
			const spe = 5
			s := train.OneCycle{Max: c.MaxLR, TotalSteps: c.TotalSteps, StepsPerEpoch: spe, PctStart: c.PctStart, DivFactor: c.DivFactor, FinalDivFactor: c.FinalDivFactor}
			for k, want := range c.LRs {
				epoch, step := k/spe, k%spe
				got := s.LR(float64(epoch) + float64(step+1)/spe)
				if math.Abs(got-want) > 1e-12*math.Max(1, want) {
					t.Errorf("step %d: rate %.17g, torch %.17g", k, got, want)
				}
			}
		})
	}
}

// The label-smoothed loss and its gradient equal
// nn.CrossEntropyLoss(label_smoothing=0.1)'s.
func TestLabelSmoothingMatchesTorch(t *testing.T) {
	ls := loadRecipe(t).LabelSmoothing
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			x, err := b.NewTensor(ls.N, ls.K)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release()
			if err := x.Write(ls.Logits); err != nil {
				t.Fatal(err)
			}
			ce := train.NewCrossEntropy(b)
			defer ce.Close()
			ce.LabelSmoothing = ls.Eps
			r, dx, err := ce.Forward(x, ls.Labels, true)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.Loss-ls.Loss) > 1e-6*ls.Loss {
				t.Errorf("loss %.8g, torch %.8g", r.Loss, ls.Loss)
			}
			g := make([]float32, ls.N*ls.K)
			if err := dx.Read(g); err != nil {
				t.Fatal(err)
			}
			near(t, "dloss/dlogits", g, ls.Grad, 1e-6)
		})
	}
}

// Nesterov SGD with weight decay takes torch.optim.SGD(nesterov=True)'s
// steps, the rate changing between them.
func TestNesterovMatchesTorch(t *testing.T) {
	n := loadRecipe(t).Nesterov
	p := &train.Param{Name: "p", Value: slices.Clone(n.Init), Grad: make([]float32, len(n.Init))}
	opt := &train.SGD{Momentum: n.Momentum, WeightDecay: n.WeightDecay, Nesterov: true}
	for k, lr := range n.LRs {
		copy(p.Grad, n.Grads[k])
		opt.Step([]*train.Param{p}, lr)
		near(t, fmt.Sprintf("step %d", k), p.Value, n.After[k], 1e-6)
	}
}

// emaNet is a Layer with one parameter and one buffer, for EMA's test.
type emaNet struct {
	train.Layer
	p, b *train.Param
}

func (e emaNet) Params() []*train.Param  { return []*train.Param{e.p} }
func (e emaNet) Buffers() []*train.Param { return []*train.Param{e.b} }

// The EMA of parameters and buffers equals AveragedModel(use_buffers=True)
// with avg_fn decay·avg + (1−decay)·p after each update, and Swap twice
// restores the network.
func TestEMAMatchesAveragedModel(t *testing.T) {
	ref := loadRecipe(t)
	e := ref.EMA
	net := emaNet{p: &train.Param{Name: "w"}, b: &train.Param{Name: "running_mean"}}
	ema := &train.EMA{Decay: e.Decay}
	for k, m := range e.Models {
		net.p.Value, net.b.Value = slices.Clone(m.Params), slices.Clone(m.Buffers)
		ema.Update(net)
		near(t, fmt.Sprintf("update %d params", k), ema.Values[0], e.Averaged[k].Params, 1e-6)
		near(t, fmt.Sprintf("update %d buffers", k), ema.Values[1], e.Averaged[k].Buffers, 1e-6)
	}
	if ema.Updates != len(e.Models) {
		t.Errorf("%d updates counted, want %d", ema.Updates, len(e.Models))
	}
	last := e.Models[len(e.Models)-1]
	ema.Swap(net)
	near(t, "swapped in", net.p.Value, e.Averaged[len(e.Models)-1].Params, 1e-6)
	ema.Swap(net)
	near(t, "swapped back", net.p.Value, last.Params, 0)
	near(t, "swapped back", net.b.Value, last.Buffers, 0)

	w := ref.EMAWarmup
	ema = &train.EMA{Decay: w.Decay, Warmup: true}
	for k, m := range w.Models {
		net.p.Value, net.b.Value = slices.Clone(m.Params), slices.Clone(m.Buffers)
		ema.Update(net)
		near(t, fmt.Sprintf("warm-up update %d params", k), ema.Values[0], w.Averaged[k].Params, 1e-6)
		near(t, fmt.Sprintf("warm-up update %d buffers", k), ema.Values[1], w.Averaged[k].Buffers, 1e-6)
	}
}

// Progressive resizing's 28→20 equals F.interpolate(bilinear,
// antialias=True).
func TestResizedMatchesTorch(t *testing.T) {
	r := loadRecipe(t).Resize
	src := &floatData{c: r.C, h: r.H, w: r.W, x: r.X}
	d := train.NewResized(src, r.OH, r.OW)
	if c, h, w := d.Shape(); c != r.C || h != r.OH || w != r.OW {
		t.Fatalf("shape %d×%d×%d", c, h, w)
	}
	got := make([]float32, r.N*r.C*r.OH*r.OW)
	d.Fill([]int{0}, got, make([]int, 1))
	near(t, "resized", got, r.Y, 1e-5)
}

// floatData is a one-image Dataset of given floats.
type floatData struct {
	c, h, w int
	x       []float32
}

func (f *floatData) Len() int             { return 1 }
func (f *floatData) Shape() (c, h, w int) { return f.c, f.h, f.w }
func (f *floatData) Fill(idx []int, x []float32, y []int) {
	for j := range idx {
		copy(x[j*len(f.x):], f.x)
		y[j] = 0
	}
}

// Flip test-time augmentation scores the mean of each image's logits and
// its mirror's: the loss Evaluate reports is that of the mean logits.
func TestEvaluateFlip(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			net, err := train.NewThinNet(b, toyNet, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer net.Close()
			data := toyData(10, 4)
			// Make the images asymmetric, so a mirror changes the logits.
			for i := range data.Pixels {
				if i%12 < 4 {
					data.Pixels[i] = 250
				}
			}
			logits := func(flip bool) []float32 {
				x := make([]float32, 10*144)
				data.Fill([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, x, make([]int, 10))
				if flip {
					for r := 0; r < len(x); r += 12 {
						slices.Reverse(x[r : r+12])
					}
				}
				xt, err := b.NewTensor(10, 1, 12, 12)
				if err != nil {
					t.Fatal(err)
				}
				defer xt.Release()
				if err := xt.Write(x); err != nil {
					t.Fatal(err)
				}
				y, err := net.Forward(xt, false)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]float32, 30)
				if err := y.Read(out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			plain, mirrored := logits(false), logits(true)
			mean := make([]float32, len(plain))
			for i := range mean {
				mean[i] = (plain[i] + mirrored[i]) / 2
			}
			lossOf := func(l []float32) float64 {
				x, _ := b.NewTensor(10, 3)
				defer x.Release()
				x.Write(l)
				ce := train.NewCrossEntropy(b)
				defer ce.Close()
				r, _, err := ce.Forward(x, data.Labels, false)
				if err != nil {
					t.Fatal(err)
				}
				return r.Loss
			}
			want, unflipped := lossOf(mean), lossOf(plain)
			if math.Abs(want-unflipped) < 1e-4 {
				t.Fatalf("the mirror does not change the loss (%g): the test would prove nothing", want)
			}
			m, err := train.EvaluateWith(context.Background(), b, net, data, 4, train.EvalOptions{Flip: true})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(m.Loss-want) > 1e-5*want {
				t.Errorf("flip TTA loss %.6g, the mean logits' %.6g (without flip %.6g)", m.Loss, want, unflipped)
			}
		})
	}
}

// A trainer with an EMA evaluates the average, leaves the trained weights
// in place, and a checkpoint carries the average: a resumed run evaluates
// the same model as an uninterrupted one.
func TestTrainerEMA(t *testing.T) {
	b := train.NewReference(train.BackendOptions{Threads: 2})
	defer b.Close()
	data, test := toyData(64, 2), toyData(32, 3)
	newTrainer := func() (*train.Trainer, func()) {
		net, err := train.NewThinNet(b, toyNet, 1)
		if err != nil {
			t.Fatal(err)
		}
		tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, Nesterov: true}, train.Constant(0.05), 16, 1)
		tr.EMA = &train.EMA{Decay: 0.5}
		tr.LabelSmoothing = 0.1
		return tr, func() { tr.Close(); net.Close() }
	}
	tr, done := newTrainer()
	defer done()
	ctx := context.Background()
	for range 2 {
		if _, err := tr.TrainEpoch(ctx, data, nil); err != nil {
			t.Fatal(err)
		}
	}
	if tr.EMA.Updates != 8 {
		t.Errorf("%d EMA updates after 8 steps", tr.EMA.Updates)
	}
	live := slices.Clone(tr.Net.Params()[0].Value)
	withEMA, err := tr.Evaluate(ctx, test, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(live, tr.Net.Params()[0].Value) {
		t.Fatal("evaluating the EMA changed the trained weights")
	}
	ema := tr.EMA
	tr.EMA = nil
	without, err := tr.Evaluate(ctx, test, 8)
	if err != nil {
		t.Fatal(err)
	}
	tr.EMA = ema
	if withEMA.Loss == without.Loss {
		t.Errorf("the EMA's loss %g is the live weights' loss: the average was not evaluated", withEMA.Loss)
	}
	path := filepath.Join(t.TempDir(), "ckpt")
	if err := tr.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	tr2, done2 := newTrainer()
	defer done2()
	if err := tr2.LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	resumed, err := tr2.Evaluate(ctx, test, 8)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Loss != withEMA.Loss || tr2.EMA.Updates != 8 {
		t.Errorf("resumed EMA: loss %g after %d updates, saved %g after 8", resumed.Loss, tr2.EMA.Updates, withEMA.Loss)
	}
	tr2.EMA = nil
	if err := tr2.LoadCheckpoint(path); err == nil {
		t.Error("a checkpoint with an EMA loaded into a trainer without one")
	}
}

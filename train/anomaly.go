package train

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrNonFinite marks training stopped because the loss, or the weights
// after an update, became NaN or infinite. The error says at which step, and where the first non-finite
// value appears (as torch.autograd's anomaly mode points to the operation
// that produced it).
var ErrNonFinite = errors.New("non-finite values")

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func finite32(v []float32) bool {
	for _, x := range v {
		if x-x != 0 { // NaN and ±Inf only
			return false
		}
	}
	return true
}

// nonFiniteParams names the parameters holding a NaN or an infinity.
func nonFiniteParams(params []*Param) []string {
	var bad []string
	for _, p := range params {
		if !finite32(p.Value) {
			bad = append(bad, p.Name)
		}
	}
	return bad
}

// nonFiniteGrads names the parameters whose gradient holds a NaN or an
// infinity.
func nonFiniteGrads(params []*Param) []string {
	var bad []string
	for _, p := range params {
		if !finite32(p.Grad) {
			bad = append(bad, p.Name)
		}
	}
	return bad
}

// nonFinite describes step t.Step+1, whose loss is not finite or whose
// update left parameters that are not (what says which): it runs the
// batch of input slot s through the first device's network again, layer
// by layer, to find the first layer whose output is not finite, and lists
// the parameters and gradients that are not. The buffers (BatchNorm's
// running statistics) are restored after that pass.
func (t *Trainer) nonFinite(s int, what string, lr float64) error {
	msg := fmt.Sprintf("epoch %d step %d: %s", t.Epoch+1, t.Step+1, what)
	d := t.devs[0]
	// A device state is read into the host mirrors, where the lists
	// below look, and written back after the pass (its buffers restored).
	if err := t.pullState(); err != nil {
		msg += fmt.Sprintf(" (%v)", err)
	}
	defer t.pushState()
	if where, err := firstNonFinite(d.net, d.x[s]); err != nil {
		msg += fmt.Sprintf(" (locating it failed: %v)", err)
	} else {
		msg += "; first non-finite value: " + where
	}
	list := func(names []string) string {
		if len(names) > 4 {
			return strings.Join(names[:4], ", ") + fmt.Sprintf(" and %d more", len(names)-4)
		}
		return strings.Join(names, ", ")
	}
	if bad := nonFiniteParams(d.params); len(bad) > 0 {
		msg += "; parameters not finite: " + list(bad)
	}
	if bad := nonFiniteGrads(d.params); len(bad) > 0 {
		msg += "; gradients not finite: " + list(bad)
	}
	msg += fmt.Sprintf("; learning rate %g", lr)
	return fmt.Errorf("train: %w: %s", ErrNonFinite, msg)
}

// firstNonFinite runs x through net's layers (the top-level ones of a
// Sequential) in training mode and names the first whose output holds a
// NaN or an infinity: "the input batch", "layer i NAME (TYPE)", or
// "none: the logits are finite". It runs on one device alone, so SyncBN
// layers use this device's batch statistics for the pass (their
// all-reduce would wait for replicas and ranks that do not run it).
func firstNonFinite(net Layer, x Tensor) (string, error) {
	if x == nil {
		return "", errors.New("no input staged")
	}
	bufs := net.Buffers()
	saved := make([][]float32, len(bufs))
	for i, b := range bufs {
		saved[i] = append([]float32(nil), b.Value...)
	}
	var synced []*BatchNorm2D
	var syncs []func([]float64) error
	Walk(net, func(l Layer) {
		if bn, ok := l.(*BatchNorm2D); ok && bn.Sync != nil {
			synced, syncs = append(synced, bn), append(syncs, bn.Sync)
			bn.Sync = nil
		}
	})
	defer func() {
		for i, b := range bufs {
			copy(b.Value, saved[i])
		}
		for i, bn := range synced {
			bn.Sync = syncs[i]
		}
	}()
	var host []float32
	check := func(y Tensor) (bool, error) {
		n := 1
		for _, d := range y.Shape() {
			n *= d
		}
		host = append(host[:0], make([]float32, n)...)
		if err := y.Read(host); err != nil {
			return false, err
		}
		return finite32(host), nil
	}
	if ok, err := check(x); err != nil || !ok {
		return "the input batch", err
	}
	layers := []Layer{net}
	if sq, ok := net.(*Sequential); ok {
		layers = sq.Layers
	}
	for i, l := range layers {
		y, err := l.Forward(x, true)
		if err != nil {
			return "", fmt.Errorf("layer %d forward: %w", i, err)
		}
		ok, err := check(y)
		if err != nil {
			return "", err
		}
		if !ok {
			return fmt.Sprintf("the output of layer %d %s", i, layerName(l)), nil
		}
		x = y
	}
	return "none in the forward pass: the logits are finite", nil
}

// layerName is a layer's parameter prefix and type: "features.3.conv
// (Conv2D)", or the type alone for a layer without parameters.
func layerName(l Layer) string {
	typ := strings.TrimPrefix(fmt.Sprintf("%T", l), "*")
	typ = typ[strings.LastIndex(typ, ".")+1:]
	ps := l.Params()
	if len(ps) == 0 {
		return "(" + typ + ")"
	}
	prefix := ps[0].Name
	for _, p := range ps[1:] {
		for !strings.HasPrefix(p.Name, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if len(ps) == 1 || !strings.HasSuffix(prefix, ".") {
		if i := strings.LastIndex(prefix, "."); i > 0 {
			prefix = prefix[:i+1]
		}
	}
	return strings.TrimSuffix(prefix, ".") + " (" + typ + ")"
}

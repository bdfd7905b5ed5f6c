package train

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// BNRecalibration reports a RecalibrateBN pass.
type BNRecalibration struct {
	Layers  int     `json:"layers"`  // BatchNorm layers recalibrated
	Batches int     `json:"batches"` // batches passed (on this rank; summed over the ranks by Trainer.RecalibrateBN)
	Images  int     `json:"images"`
	Seconds float64 `json:"seconds"`
}

// RecalibrateBN recomputes the running statistics of every BatchNorm2D in
// net from the first batches batches of epoch epoch of data (all of the
// epoch when batches ≤ 0), with the semantics of PyTorch's
// torch.optim.swa_utils.update_bn: the running means and variances are
// reset (to 0 and 1), each batch goes forward in training mode — no
// backward pass, no weight update — and the running statistics become the
// cumulative average over the batches of each batch's mean and unbiased
// variance (BatchNorm with momentum=None: momentum 1/k at the k-th batch).
// Each BatchNorm's Momentum is restored afterwards.
//
// FixRes's test-resolution adjustment of the BatchNorm statistics
// (Touvron et al., 2019, the variant without fine-tuning) is this pass
// with data being the training images at the test resolution under the
// test preprocessing: a network trained on small random crops sees
// objects larger at test time, and its activation statistics change with
// them.
//
// The batches are normalised with their own statistics only: a Sync
// function (SyncBN) is ignored during the pass; Trainer.RecalibrateBN
// combines the ranks' statistics afterwards.
func RecalibrateBN(ctx context.Context, b Backend, net Layer, data Stream, epoch, batches int) (BNRecalibration, error) {
	return recalibrateBN(ctx, b, net, data, epoch, batches, nil)
}

// recalibrateBN is RecalibrateBN; bind, when not nil, runs once the
// running statistics are reset on the host and before the first batch
// (Trainer.RecalibrateBN binds its device state there: the pass then runs
// on the device, from the reset statistics).
func recalibrateBN(ctx context.Context, b Backend, net Layer, data Stream, epoch, batches int, bind func() error) (BNRecalibration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	bns := batchNorms(net)
	rep := BNRecalibration{Layers: len(bns)}
	if len(bns) == 0 {
		return rep, nil
	}
	type saved struct {
		momentum float32
		sync     func([]float64) error
	}
	keep := make([]saved, len(bns))
	for i, bn := range bns {
		keep[i] = saved{bn.Momentum, bn.Sync}
		bn.Sync = nil
		for c := range bn.C {
			bn.RunningMean.Value[c], bn.RunningVar.Value[c] = 0, 1 // reset_running_stats
		}
	}
	defer func() {
		for i, bn := range bns {
			bn.Momentum, bn.Sync = keep[i].momentum, keep[i].sync
		}
	}()
	if bind != nil {
		if err := bind(); err != nil {
			return rep, err
		}
	}
	c, h, w := data.Shape()
	var (
		x    Tensor
		xLen int
	)
	in := &batchInput{b: b}
	defer func() {
		if x != nil {
			x.Release()
		}
		in.close()
	}()
	for bt, err := range data.Epoch(ctx, epoch, 0) {
		if err != nil {
			return rep, err
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		n := len(bt.Y)
		if n == 0 {
			continue
		}
		if x == nil || xLen != n {
			if x != nil {
				x.Release()
			}
			if x, err = b.NewTensor(n, c, h, w); err != nil {
				return rep, err
			}
			xLen = n
		}
		if err := in.write(x, bt, n, w, false); err != nil {
			return rep, err
		}
		rep.Batches++
		rep.Images += n
		// momentum=None: running ← running + (batch − running)/k.
		m := 1 / float32(rep.Batches)
		for _, bn := range bns {
			bn.Momentum = m
		}
		if _, err := net.Forward(x, true); err != nil {
			return rep, fmt.Errorf("train: BatchNorm recalibration, batch %d: %w", rep.Batches, err)
		}
		if batches > 0 && rep.Batches == batches {
			break
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	if rep.Batches == 0 {
		return rep, fmt.Errorf("train: BatchNorm recalibration: the data yielded no batch")
	}
	return rep, nil
}

// batchNorms lists the BatchNorm2D layers of net in forward order.
func batchNorms(net Layer) []*BatchNorm2D {
	var bns []*BatchNorm2D
	Walk(net, func(l Layer) {
		if bn, ok := l.(*BatchNorm2D); ok {
			bns = append(bns, bn)
		}
	})
	return bns
}

// RecalibrateBN is the package's RecalibrateBN on the weights the trainer
// evaluates: the EMA's average when EMA is set (its buffers get the new
// statistics; the weights being trained keep theirs), else Net.
//
// In distributed training each rank passes batches of its own share of
// the data (its stream), normalised with that local batch's statistics;
// then the ranks' running means and variances are averaged, weighted by
// their batch counts, with one all-reduce, so every rank holds the same
// statistics: the cumulative average over all the ranks' batches, each
// local batch counting as one batch — update_bn over the union of the
// ranks' batches. The returned Batches and Images are the sums over the
// ranks.
//
// A backend that keeps the state on its device runs the pass there (the
// state bound from the host values after the reset, and pulled back
// after the pass), as evaluation does, when no training call holds the
// state and no layer synchronises BatchNorm statistics.
func (t *Trainer) RecalibrateBN(ctx context.Context, data Stream, epoch, batches int) (rep BNRecalibration, err error) {
	if t.EMA != nil && t.EMA.Values != nil {
		t.EMA.Swap(t.Net)
		defer t.EMA.Swap(t.Net)
	}
	var bind func() error
	if t.state == nil && t.nativeOK() {
		bind = t.bindState
		defer func() {
			if uerr := t.unbindState(); uerr != nil && err == nil {
				err = fmt.Errorf("train: BatchNorm recalibration: %w", uerr)
			}
		}()
	}
	rep, err = recalibrateBN(ctx, t.Backend, t.Net, data, epoch, batches, bind)
	if err != nil || t.dist == nil {
		return rep, err
	}
	// The ranks' statistics are combined on the host: the device state's
	// goes back first.
	if err := t.unbindState(); err != nil {
		return rep, err
	}
	start := time.Now()
	bns := batchNorms(t.Net)
	if len(bns) == 0 {
		return rep, nil
	}
	var v []float64
	k := float64(rep.Batches)
	for _, bn := range bns {
		for c := range bn.C {
			v = append(v, k*float64(bn.RunningMean.Value[c]), k*float64(bn.RunningVar.Value[c]))
		}
	}
	v = append(v, k, float64(rep.Images))
	if err := t.dist.comm.AllReduceF64(v); err != nil {
		return rep, fmt.Errorf("train: all-reduce of the recalibrated BatchNorm statistics: %w", err)
	}
	total := v[len(v)-2]
	i := 0
	for _, bn := range bns {
		for c := range bn.C {
			bn.RunningMean.Value[c], bn.RunningVar.Value[c] = float32(v[i]/total), float32(v[i+1]/total)
			i += 2
		}
	}
	rep.Batches, rep.Images = int(total), int(v[len(v)-1])
	rep.Seconds += time.Since(start).Seconds()
	return rep, nil
}

package train

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/faster-training/faster/collective"
)

// device is one engine the trainer runs forward and backward passes on:
// its backend, its copy of the network and its share [lo, hi) of the
// local batch.
type device struct {
	b      Backend
	net    Layer
	loss   LossOp        // the backend's, or the host adapter over CrossEntropy
	smooth float64       // loss's label smoothing
	in     ByteInputOp   // normalises byte batches; made with the input slots
	rows   DeviceInputOp // reads batches in device memory; made for the first
	params []*Param
	x      [2]Tensor // input slots: one staged while the other is used
	ys     [2][]int
	lo, hi int
	// A bound device state's (Trainer.bindState): the device's State,
	// and with replicas its all-reduce over a local group of the devices.
	state  State
	scaled ScalerState // the state, when the loss reads the GradScaler's scale on the device (Trainer.scaled)
	comm   collective.Comm
	reduce AllReduceOp
	// jobs runs work on the device's own goroutine, locked to its OS
	// thread (OpenMP keeps a thread team per OS thread); nil for the first
	// device, which runs on the trainer's goroutine.
	jobs   chan func()
	exited chan struct{}
	err    error
}

// ensureLoss makes the device's loss op for label smoothing smoothing.
func (d *device) ensureLoss(smoothing float64) error {
	if d.loss != nil && d.smooth == smoothing {
		return nil
	}
	if d.loss != nil {
		d.loss.Close()
		d.loss = nil
	}
	l, err := newLoss(d.b, LossSpec{LabelSmoothing: smoothing})
	if err != nil {
		return err
	}
	d.loss, d.smooth = l, smoothing
	return nil
}

// forwardBackward runs slot s through the device's network, the loss
// gradient multiplied by scale, leaving the parameter gradients in params
// and the loss's sums in the loss op. With a device state: zero (whether
// to zero the gradients and accumulate into them, Trainer.ZeroGrad on
// the first device), and with replicas the gradient tensors summed over
// the devices (each device's AllReduceOp, on its own goroutine) before
// they are accumulated.
func (d *device) forwardBackward(s int, scale float64, share ScaleShare, zero bool, reduced func() error) {
	var acc GradAccumulator
	if zero && d.state != nil {
		acc = d.state.(GradAccumulator) // bindNative checked
		if d.err = d.pointAtScratch(acc); d.err != nil {
			d.pointAtGrads()
			return
		}
	}
	d.err = func() error {
		logits, err := d.net.Forward(d.x[s], true)
		if err != nil {
			return err
		}
		var dl Tensor
		if d.scaled != nil {
			dl, err = d.loss.(ScaledLossOp).ForwardScaled(logits, d.ys[s], d.scaled, share) // bindScaler checked
		} else {
			dl, err = d.loss.Forward(logits, d.ys[s], scale)
		}
		if err != nil {
			return err
		}
		_, err = d.net.Backward(dl, false)
		return err
	}()
	if d.reduce != nil { // every device takes part, after an error too: the others wait for it
		err := d.reduce.AllReduce(gradTensors(d.params))
		if err == nil {
			err = d.reduce.Wait()
		}
		d.err = errors.Join(d.err, err)
	}
	if reduced != nil { // DDP's buckets, whatever happened: none stays in flight
		d.err = errors.Join(d.err, reduced())
	}
	if acc != nil {
		d.pointAtGrads()
		if d.err == nil {
			d.err = acc.AccumulateGrads()
		}
	}
}

// pointAtScratch zeroes the state's gradients and points the backward
// pass at its scratch tensors; pointAtGrads points it back.
func (d *device) pointAtScratch(acc GradAccumulator) error {
	if err := acc.ZeroGrads(); err != nil {
		return fmt.Errorf("train: zeroing the gradients: %w", err)
	}
	for i, p := range d.params {
		sc, err := acc.ScratchGrad(i)
		if err != nil {
			return fmt.Errorf("train: scratch gradient of %s: %w", p.Name, err)
		}
		p.dg = sc
	}
	return nil
}

func (d *device) pointAtGrads() {
	for i, p := range d.params {
		_, p.dg = d.state.Tensors(i)
	}
}

// gradTensors lists the device gradients of ps.
func gradTensors(ps []*Param) []Tensor {
	ts := make([]Tensor, len(ps))
	for i, p := range ps {
		ts[i] = p.dg
	}
	return ts
}

// AddReplica adds a device to data-parallel training in this process
// (torch.nn.DataParallel): b is the device's backend and net a network of
// the same architecture built on it. The replica's parameters are made to
// share the trainer's weight memory (its own initial values are dropped)
// and its buffers are copied from the trainer's. Each step splits the
// batch over the devices, runs their passes at once, sums their
// gradients into the trainer's network and updates the weights once.
// Add replicas before training and before Distribute.
func (t *Trainer) AddReplica(b Backend, net Layer) error {
	if t.dist != nil {
		return errors.New("train: AddReplica after Distribute")
	}
	own, ps := t.Net.Params(), net.Params()
	if err := sameShapes(own, ps); err != nil {
		return fmt.Errorf("train: replica parameters: %w", err)
	}
	ob, bs := t.Net.Buffers(), net.Buffers()
	if err := sameShapes(ob, bs); err != nil {
		return fmt.Errorf("train: replica buffers: %w", err)
	}
	for i, p := range ps {
		p.Value = own[i].Value
	}
	for i, p := range bs {
		copy(p.Value, ob[i].Value)
	}
	t.releaseInput()
	if err := t.unbindState(); err != nil {
		return err
	}
	d := &device{b: b, net: net, params: ps, jobs: make(chan func()), exited: make(chan struct{})}
	go func() {
		defer close(d.exited)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for f := range d.jobs {
			f()
		}
	}()
	t.devs = append(t.devs, d)
	return nil
}

// Devices is the number of devices this process trains on.
func (t *Trainer) Devices() int { return len(t.devs) }

func sameShapes(a, b []*Param) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d tensors, want %d", len(b), len(a))
	}
	for i := range a {
		if !slices.Equal(a[i].Shape, b[i].Shape) {
			return fmt.Errorf("%s is %v, want %v", b[i].Name, b[i].Shape, a[i].Shape)
		}
	}
	return nil
}

// share is device d's share of the loss scale (its gradScale's terms
// above, for a scale kept on the device: ScaledLossOp).
func (t *Trainer) share(d *device) ScaleShare {
	return ScaleShare{Ranks: t.size(), Rows: d.hi - d.lo, Local: t.LocalBatch()}
}

// forwardBackward computes the gradients of the mean loss of the batch in
// slot s into the trainer's parameters. When read, it returns the loss
// and accuracy of the steps since the last read (over the global batch
// when distributed); otherwise they stay in the devices' loss ops.
func (t *Trainer) forwardBackward(s int, read bool) (Result, error) {
	local := float64(t.LocalBatch())
	scale := 1.0
	if t.Scaler != nil {
		scale = t.Scaler.Scale
	}
	if t.dist != nil {
		scale /= float64(t.dist.comm.Size())
		t.dist.begin()
	}
	first := t.devs[0]
	if t.ZeroGrad && !t.native {
		t.zeroGrad(first.params)
	}
	waits := make(chan struct{}, len(t.devs))
	for _, d := range t.devs[1:] {
		d.jobs <- func() {
			d.forwardBackward(s, scale*float64(d.hi-d.lo)/local, t.share(d), false, nil)
			waits <- struct{}{}
		}
	}
	// A device state's DDP buckets are summed before ZeroGrad's
	// accumulation, as the host path's are.
	var reduced func() error
	if t.dist != nil && t.native {
		reduced = t.dist.finish
	}
	first.forwardBackward(s, scale*float64(first.hi-first.lo)/local, t.share(first), t.ZeroGrad && t.native, reduced)
	var errs []error
	if first.err != nil {
		errs = append(errs, first.err)
	}
	if t.dist != nil && !t.native {
		if err := t.dist.finish(); err != nil {
			errs = append(errs, err)
		}
	}
	for range t.devs[1:] {
		<-waits
	}
	var r Result
	for i, d := range t.devs {
		if d.err != nil && i > 0 {
			errs = append(errs, fmt.Errorf("device %d: %w", i, d.err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if read {
		for _, d := range t.devs {
			sums, err := d.loss.Sums()
			if err != nil {
				return Result{}, fmt.Errorf("train: reading the loss: %w", err)
			}
			r.Loss += sums.Loss
			r.Correct1 += sums.Top1
			r.Correct5 += sums.Top5
			r.Samples += sums.Samples
		}
	}
	// Sum the replicas' gradients into the first device's, in device
	// order (deterministic); a device state's devices summed theirs.
	for _, d := range t.devs[1:] {
		if t.native {
			break
		}
		for i, p := range first.params {
			for j, g := range d.params[i].Grad {
				p.Grad[j] += g
			}
		}
	}
	if t.ZeroGrad && !t.native {
		t.accumulateGrad(first.params)
	}
	if t.dist != nil && read {
		m := []float64{r.Loss, float64(r.Correct1), float64(r.Correct5), float64(r.Samples)}
		if err := t.dist.comm.AllReduceF64(m); err != nil {
			return Result{}, fmt.Errorf("train: all-reduce of the step's loss: %w", err)
		}
		r = Result{Loss: m[0], Correct1: int(m[1]), Correct5: int(m[2]), Samples: int(m[3])}
	}
	if r.Samples > 0 {
		r.Loss /= float64(r.Samples)
	}
	return r, nil
}

// zeroGrad points the backward pass at scratch gradients and zeroes the
// real ones, which accumulateGrad then adds the scratch into (torch's
// zero_grad() followed by an accumulating backward pass).
func (t *Trainer) zeroGrad(params []*Param) {
	if t.scratch == nil {
		for _, p := range params {
			t.scratch = append(t.scratch, make([]float32, len(p.Grad)))
		}
	}
	for i, p := range params {
		clear(p.Grad)
		p.Grad, t.scratch[i] = t.scratch[i], p.Grad
	}
}

func (t *Trainer) accumulateGrad(params []*Param) {
	for i, p := range params {
		acc := t.scratch[i]
		for j, g := range p.Grad {
			acc[j] += g
		}
		p.Grad, t.scratch[i] = acc, p.Grad
	}
}

// distributed is the trainer's side of one rank of distributed data
// parallelism: gradients are all-reduced in buckets, in the order the
// backward pass finishes them, each bucket as soon as it is full, on a
// goroutine of its own while the backward pass goes on.
type distributed struct {
	comm     collective.Comm // SyncBN, metrics, broadcasts: the trainer's goroutine
	grads    collective.Comm // bucket all-reduces: the worker's goroutine
	capBytes int
	pending  []*Param
	bytes    int
	buckets  []*bucket // this step's, in order
	cache    []*bucket // buffers reused step after step
	jobs     chan *bucket
	exited   chan struct{}
	all      []*Param // networks that do not report gradients layer by layer
	stats    CommStats
	// With a bound device state (native): the gradients are tensors,
	// summed by the backend's own AllReduceOp (op, on the trainer's
	// goroutine, over grads) when it has one, else read into the
	// buckets' host memory and written back (the host fallback).
	native bool
	op     AllReduceOp
}

// bindNative makes the buckets take gradient tensors, summed by b's own
// all-reduce when it has one for the group (AllReduceBackend), else read
// into host memory and summed on the buckets' goroutine.
func (d *distributed) bindNative(b Backend) error {
	d.native = true
	op, err := backendAllReduce(b, d.grads)
	if err != nil {
		return err
	}
	d.op = op
	return nil
}

func (d *distributed) releaseNative() {
	if d.op != nil {
		d.op.Close()
		d.op = nil
	}
	d.native = false
}

type bucket struct {
	params []*Param
	flat   []float32
	done   chan error
	took   time.Duration // of its last all-reduce, written before done
	// native: the gradient tensors summed, and the error of reading them
	// or of queueing their all-reduce (the bucket was not sent then).
	ts  []Tensor
	err error
}

// CommStats are the gradient communication of a rank's distributed steps
// so far (Trainer.CommStats).
type CommStats struct {
	Steps int
	// Buckets are the bytes of each bucket of the last step, in the order
	// they were sent (the backward pass's).
	Buckets []int
	// AllReduce is the time the buckets' all-reduces took, summed over
	// buckets and steps (they run beside the backward pass).
	AllReduce time.Duration
	// Exposed is the time the steps waited for the all-reduces once their
	// backward pass had ended: the communication not hidden behind it.
	Exposed time.Duration
}

// DefaultBucketBytes is the gradient bucket size of Distribute when none
// is given. torch uses 25 MiB for models of hundreds of MB; the study's
// ThinNet has 1.9 MB of gradients, so 512 KiB gives it four buckets to
// overlap with its backward pass.
const DefaultBucketBytes = 512 << 10

// Distribute makes the trainer one rank of distributed data-parallel
// training over comm (torch.nn.parallel.DistributedDataParallel): the
// weights and buffers are broadcast from rank 0, each step trains on this
// rank's part of the global batch, and gradients are summed over the
// ranks in buckets of about bucketBytes (0: DefaultBucketBytes) while the
// backward pass runs. comm stays the caller's to close, after Close.
func (t *Trainer) Distribute(comm collective.Comm, bucketBytes int) error {
	if len(t.devs) > 1 {
		return errors.New("train: distributed training runs one device per process")
	}
	if t.dist != nil {
		return errors.New("train: Distribute called twice")
	}
	if bucketBytes <= 0 {
		bucketBytes = DefaultBucketBytes
	}
	if err := t.unbindState(); err != nil {
		return err
	}
	if err := broadcastState(comm, t.Net); err != nil {
		return err
	}
	grads, err := comm.Fork("grads")
	if err != nil {
		return fmt.Errorf("train: gradient communicator: %w", err)
	}
	d := &distributed{comm: comm, grads: grads, capBytes: bucketBytes, jobs: make(chan *bucket, 64), exited: make(chan struct{})}
	go func() {
		defer close(d.exited)
		for b := range d.jobs {
			start := time.Now()
			err := grads.AllReduceF32(b.flat)
			b.took = time.Since(start)
			b.done <- err
		}
	}()
	if seq, ok := t.Net.(*Sequential); ok {
		seq.GradsReady = d.ready
	} else {
		d.all = t.Net.Params() // reported at the end of the backward pass
	}
	t.releaseInput()
	t.dist = d
	return nil
}

// broadcastState copies rank 0's parameters and buffers to every rank.
func broadcastState(comm collective.Comm, net Layer) error {
	for _, p := range append(net.Params(), net.Buffers()...) {
		if err := comm.Broadcast(p.Value, 0); err != nil {
			return fmt.Errorf("train: broadcast of %s: %w", p.Name, err)
		}
	}
	return nil
}

func (d *distributed) begin() {
	d.pending, d.bytes, d.buckets = d.pending[:0], 0, d.buckets[:0]
}

// ready takes parameters whose gradients are final (Sequential.GradsReady).
func (d *distributed) ready(ps []*Param) {
	for _, p := range ps {
		d.pending = append(d.pending, p)
		d.bytes += 4 * len(p.Grad)
	}
	if d.bytes >= d.capBytes {
		d.flush()
	}
}

// flush sends the pending parameters' gradients off as one bucket.
func (d *distributed) flush() {
	if len(d.pending) == 0 {
		return
	}
	k := len(d.buckets)
	if k == len(d.cache) || !slices.Equal(d.cache[k].params, d.pending) {
		d.cache = append(d.cache[:k], &bucket{params: slices.Clone(d.pending), flat: make([]float32, d.bytes/4), done: make(chan error, 1)})
	}
	b := d.cache[k]
	d.buckets = append(d.buckets, b)
	d.pending, d.bytes = d.pending[:0], 0
	if d.native {
		b.ts = gradTensors(b.params) // the tensors the backward pass wrote
		if d.op != nil {
			start := time.Now()
			b.err = d.op.AllReduce(b.ts)
			b.took = time.Since(start)
			return
		}
		if b.err = readTensors(b.flat, b.ts); b.err != nil {
			return
		}
	} else {
		off := 0
		for _, p := range b.params {
			off += copy(b.flat[off:], p.Grad)
		}
	}
	d.jobs <- b
}

// finish sends what is pending (all of the gradients, for networks that
// do not report them layer by layer), waits for every bucket and copies
// the sums back into the gradients.
func (d *distributed) finish() error {
	start := time.Now()
	if d.all != nil {
		d.ready(d.all)
	}
	if len(d.buckets) == 0 && len(d.pending) == 0 {
		return errors.New("train: distributed step: no gradients were reported")
	}
	d.flush()
	var errs []error
	d.stats.Steps++
	d.stats.Buckets = d.stats.Buckets[:0]
	for _, b := range d.buckets {
		d.stats.Buckets = append(d.stats.Buckets, 4*len(b.flat))
		if d.native && (b.err != nil || d.op != nil) {
			d.stats.AllReduce += b.took
			if b.err != nil {
				errs = append(errs, b.err)
			}
			continue
		}
		err := <-b.done
		d.stats.AllReduce += b.took
		switch {
		case err != nil:
			errs = append(errs, err)
		case d.native:
			if err := writeTensors(b.ts, b.flat); err != nil {
				errs = append(errs, err)
			}
		default:
			off := 0
			for _, p := range b.params {
				off += copy(p.Grad, b.flat[off:off+len(p.Grad)])
			}
		}
	}
	if d.op != nil {
		if err := d.op.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	d.stats.Exposed += time.Since(start)
	if len(errs) > 0 {
		return fmt.Errorf("train: gradient all-reduce: %w", errs[0])
	}
	return nil
}

// CommStats reports the gradient communication of the distributed steps
// trained so far; zero without Distribute.
func (t *Trainer) CommStats() CommStats {
	if t.dist == nil {
		return CommStats{}
	}
	s := t.dist.stats
	s.Buckets = slices.Clone(s.Buckets)
	return s
}

// AllReduceGrads all-reduces the current gradients as a step does — the
// same buckets, sent in the order of the backward pass, the sums copied
// back — with no forward or backward pass: a step's communication alone,
// to time it. Every rank must call it; it does not count in CommStats.
func (t *Trainer) AllReduceGrads() error {
	d := t.dist
	if d == nil {
		return errors.New("train: AllReduceGrads without Distribute")
	}
	saved := d.stats
	defer func() { d.stats = saved }()
	d.begin()
	if seq, ok := t.Net.(*Sequential); ok && d.all == nil {
		for i := len(seq.Layers) - 1; i >= 0; i-- { // Sequential.Backward's order
			if ps := seq.Layers[i].Params(); len(ps) > 0 {
				d.ready(ps)
			}
		}
	}
	return d.finish()
}

func (d *distributed) close() {
	close(d.jobs)
	<-d.exited
	d.grads.Close()
}

// Evaluate runs the trainer's network in inference mode over data. In
// distributed training each rank evaluates its share of data and the
// metrics are summed over the ranks, every rank getting the totals; the
// buffers (running statistics) are first broadcast from rank 0, as
// DistributedDataParallel does before each forward pass. With EMA set it
// evaluates the average of the weights; with EvalFlip, with flip
// test-time augmentation.
func (t *Trainer) Evaluate(ctx context.Context, data Dataset, batch int) (Metrics, error) {
	rank, ranks := 0, 1
	if t.dist != nil {
		rank, ranks = t.dist.comm.Rank(), t.dist.comm.Size()
	}
	return t.EvaluateStream(ctx, EvalStream(data, batch, rank, ranks), 0)
}

// EvaluateStream is Evaluate over one epoch of a Stream; in distributed
// training each rank's stream holds its share of the data.
func (t *Trainer) EvaluateStream(ctx context.Context, data Stream, epoch int) (_ Metrics, err error) {
	opts := EvalOptions{Flip: t.EvalFlip}
	// A backend that keeps the state on its device evaluates there (flip
	// TTA too): the state bound for the evaluation when no training call
	// holds it, and released after without a pull (inference changes none
	// of it), but for ranks, which take rank 0's buffers into it.
	device := t.nativeOK()
	if device && t.state == nil {
		if err := t.bindState(); err != nil {
			return Metrics{}, err
		}
		if t.dist != nil {
			defer func() { err = errors.Join(err, t.unbindState()) }()
		} else {
			defer t.releaseState()
		}
	}
	device = device && t.native
	if t.EMA != nil {
		if err := t.swapEMA(); err != nil {
			return Metrics{}, err
		}
		defer t.swapEMA()
	}
	eval := func() (Metrics, error) {
		if device {
			return evaluateDevice(ctx, t.Backend, t.Net, data, epoch, opts)
		}
		return EvaluateStreamWith(ctx, t.Backend, t.Net, data, epoch, opts)
	}
	if t.dist == nil {
		return eval()
	}
	if err := t.syncBuffers(); err != nil {
		return Metrics{}, err
	}
	m, err := eval()
	if err != nil {
		return m, err
	}
	return t.sumMetrics(m)
}

// releaseState releases a state bound for an evaluation without pulling
// it: the host mirrors are what it was made from.
func (t *Trainer) releaseState() {
	if t.state == nil {
		return
	}
	if t.native {
		t.releaseNative()
	} else {
		t.state.Release()
	}
	t.state, t.native, t.stateOpt, t.stateEMA = nil, false, nil, nil
}

// evaluateDevice is EvaluateStreamWith (without flip) on a network whose
// parameters are bound to a device state: the device's ops and loss
// (LossOp, its sums read once, at the end), each batch's images and
// labels copied once. It gives the host evaluator's bits.
func evaluateDevice(ctx context.Context, b Backend, net Layer, data Stream, epoch int, opts EvalOptions) (Metrics, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	loss, err := newLoss(b, LossSpec{})
	if err != nil {
		return Metrics{}, err
	}
	defer loss.Close()
	in := &batchInput{b: b}
	defer in.close()
	c, h, w := data.Shape()
	var fl *flipTTA
	if opts.Flip {
		fl = &flipTTA{}
	}
	for bt, err := range data.Epoch(ctx, epoch, 0) {
		if err != nil {
			return Metrics{}, err
		}
		n := len(bt.Y)
		if n == 0 {
			continue
		}
		if err := evalBatch(b, net, loss, in, fl, bt, n, c, h, w); err != nil {
			return Metrics{}, err
		}
	}
	s, err := loss.Sums()
	if err != nil {
		return Metrics{}, fmt.Errorf("train: reading the evaluation's loss: %w", err)
	}
	m := Metrics{Loss: s.Loss, Samples: s.Samples}
	if s.Samples > 0 {
		n := float64(s.Samples)
		m.Loss, m.Top1, m.Top5 = s.Loss/n, float64(s.Top1)/n, float64(s.Top5)/n
	}
	m.Seconds = time.Since(start).Seconds()
	return m, nil
}

// evalBatch runs the n images of bt (written by in) through inference
// into loss's sums; with fl, flip test-time augmentation: the logits of
// the images and of their mirror images, averaged as the host's
// evaluator averages them.
func evalBatch(b Backend, net Layer, loss LossOp, in *batchInput, fl *flipTTA, bt Batch, n, c, h, w int) error {
	x, err := b.NewTensor(n, c, h, w)
	if err != nil {
		return err
	}
	defer x.Release()
	if err := in.write(x, bt, n, w, false); err != nil {
		return err
	}
	logits, err := net.Forward(x, false)
	if err != nil {
		return err
	}
	if fl == nil {
		_, err = loss.Forward(logits, bt.Y[:n], 0)
		return err
	}
	// The logits are read before the mirror images' pass overwrites them
	// (n × classes values: small beside the pass).
	if err := fl.read(&fl.plain, logits); err != nil {
		return err
	}
	if err := in.write(x, bt, n, w, true); err != nil {
		return err
	}
	if logits, err = net.Forward(x, false); err != nil {
		return err
	}
	if err := fl.read(&fl.mean, logits); err != nil {
		return err
	}
	for i, v := range fl.plain {
		fl.mean[i] = (fl.mean[i] + v) / 2
	}
	mean, err := b.NewTensor(logits.Shape()...)
	if err != nil {
		return err
	}
	defer mean.Release()
	if err := mean.Write(fl.mean); err != nil {
		return err
	}
	_, err = loss.Forward(mean, bt.Y[:n], 0)
	return err
}

// flipTTA is the host memory of evaluateDevice's flip test-time
// augmentation: the two passes' logits.
type flipTTA struct{ plain, mean []float32 }

func (f *flipTTA) read(dst *[]float32, t Tensor) error {
	k := Numel(t.Shape())
	*dst = slices.Grow((*dst)[:0], k)[:k]
	return t.Read(*dst)
}

// batchInput writes the images of a stream's batches into input tensors
// of backend b outside a training step (evaluation on the device,
// BatchNorm recalibration): floats by Tensor.Write, mirrored on the host
// for flip TTA; bytes by b's ByteInputOp, made at the first and mirroring
// them itself. Rows in device memory are refused (given back).
type batchInput struct {
	b        Backend
	in       ByteInputOp
	mirrored []float32
}

// write writes bt's first n images (of width w; x holds n of them) into
// x, mirrored left to right with flip.
func (bi *batchInput) write(x Tensor, bt Batch, n, w int, flip bool) error {
	if bt.Rows != nil {
		return bt.Rows.refuse()
	}
	per := Numel(x.Shape()) / n
	if bb := bt.Bytes; bb.Pixels != nil {
		if bi.in == nil {
			in, err := newByteInput(bi.b)
			if err != nil {
				return err
			}
			bi.in = in
		}
		bb.Pixels, bb.N, bb.Flip = bb.Pixels[:n*per], n, flip
		return bi.in.Normalize(x, bb)
	}
	xs := bt.X[:n*per]
	if flip {
		bi.mirrored = mirrorRows(bi.mirrored, xs, w)
		xs = bi.mirrored
	}
	return x.Write(xs)
}

func (bi *batchInput) close() {
	if bi.in != nil {
		bi.in.Close()
	}
}

// mirrorRows returns xs (rows of w values) with every row reversed, in
// buf's memory when it is large enough: the left-right mirror of NCHW
// images of width w.
func mirrorRows(buf, xs []float32, w int) []float32 {
	buf = slices.Grow(buf[:0], len(xs))[:len(xs)]
	for r := 0; r < len(xs); r += w {
		src, dst := xs[r:r+w], buf[r:r+w]
		for i, v := range src {
			dst[w-1-i] = v
		}
	}
	return buf
}

// syncBuffers broadcasts rank 0's buffers (running statistics) to every
// rank: the host slices, or a bound device state's tensors through host
// memory.
func (t *Trainer) syncBuffers() error {
	var tmp []float32
	for _, p := range t.Net.Buffers() {
		if p.dv == nil {
			if err := t.dist.comm.Broadcast(p.Value, 0); err != nil {
				return fmt.Errorf("train: broadcast of %s: %w", p.Name, err)
			}
			continue
		}
		tmp = slices.Grow(tmp[:0], len(p.Value))[:len(p.Value)]
		if err := p.dv.Read(tmp); err != nil {
			return fmt.Errorf("train: reading %s: %w", p.Name, err)
		}
		if err := t.dist.comm.Broadcast(tmp, 0); err != nil {
			return fmt.Errorf("train: broadcast of %s: %w", p.Name, err)
		}
		if err := p.dv.Write(tmp); err != nil {
			return fmt.Errorf("train: writing %s: %w", p.Name, err)
		}
	}
	return nil
}

func (t *Trainer) sumMetrics(m Metrics) (Metrics, error) {
	n := float64(m.Samples)
	v := []float64{m.Loss * n, m.Top1 * n, m.Top5 * n, n}
	if err := t.dist.comm.AllReduceF64(v); err != nil {
		return m, fmt.Errorf("train: all-reduce of evaluation metrics: %w", err)
	}
	m.Samples = int(v[3])
	if v[3] > 0 {
		m.Loss, m.Top1, m.Top5 = v[0]/v[3], v[1]/v[3], v[2]/v[3]
	}
	return m, nil
}

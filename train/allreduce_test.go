package train_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
)

// reducingRef is DeviceReference with an all-reduce of its own
// (AllReduceBackend), counting its calls: the path a GPU backend's NCCL
// takes.
type reducingRef struct {
	*train.DeviceReference
	calls *atomic.Int64
}

func (r reducingRef) NewAllReduce(c collective.Comm) (train.AllReduceOp, error) {
	return &countingReduce{comm: c, calls: r.calls}, nil
}

// decliningRef is DeviceReference whose AllReduceBackend declines every
// group (as the GPU's declines ranks in other processes): the trainer's
// host path sums them.
type decliningRef struct {
	*train.DeviceReference
	asked *atomic.Int64
}

func (r decliningRef) NewAllReduce(collective.Comm) (train.AllReduceOp, error) {
	r.asked.Add(1)
	return nil, nil
}

type countingReduce struct {
	comm  collective.Comm
	calls *atomic.Int64
}

func (c *countingReduce) AllReduce(ts []train.Tensor) error {
	c.calls.Add(1)
	for _, t := range ts {
		v := make([]float32, train.Numel(t.Shape()))
		if err := t.Read(v); err != nil {
			return err
		}
		if err := c.comm.AllReduceF32(v); err != nil {
			return err
		}
		if err := t.Write(v); err != nil {
			return err
		}
	}
	return nil
}

func (c *countingReduce) Wait() error { return nil }
func (c *countingReduce) Close()      {}

// stepVariants are the trainer settings the data-parallel tests run.
var stepVariants = []struct {
	name  string
	prec  train.Precision
	setup func(tr *train.Trainer)
}{
	{"momentum", train.Float32, nil},
	{"zero-grad", train.Float32, func(tr *train.Trainer) { tr.ZeroGrad = true }},
	{"nesterov-ema", train.Float32, func(tr *train.Trainer) { tr.Opt.Nesterov = true; tr.EMA = &train.EMA{Decay: 0.9} }},
	{"fp16-scaler", train.Float16, func(tr *train.Trainer) {
		// skipped steps at first, then steps taken, the scale growing by
		// a factor that is no power of two
		tr.Scaler = &train.GradScaler{Scale: 1 << 24, GrowthFactor: 1.5, BackoffFactor: 0.5, GrowthInterval: 2}
	}},
}

// DataParallel replicas on a device state (DeviceReference: each
// replica's gradients in its own tensors, summed through the host
// fallback's AllReduceOp or the backend's own, each replica stepping its
// own weights) train to the bits of the host path's replicas (gradients
// summed into the first device's slices), ZeroGrad, EMA and the
// GradScaler's skipped steps included (its scale kept on each replica's
// device, no flag read back); the parameters are bound to the device
// state at every step.
func TestDeviceDataParallelMatchesHost(t *testing.T) {
	for _, c := range stepVariants {
		t.Run(c.name, func(t *testing.T) {
			o := train.BackendOptions{Threads: 1, Precision: c.prec}
			withReplica := func(open func() train.Backend) func(tr *train.Trainer) {
				return func(tr *train.Trainer) {
					b := open()
					net, err := train.NewThinNet(b, toyNet, 99) // its own weights are dropped
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(net.Close)
					if err := tr.AddReplica(b, net); err != nil {
						t.Fatal(err)
					}
					if c.setup != nil {
						c.setup(tr)
					}
				}
			}
			host := trainDevice(t, train.NewReference(o), false, withReplica(func() train.Backend { return train.NewReference(o) }), nil)
			dev, rep := train.NewDeviceReference(o), train.NewDeviceReference(o)
			native := trainDevice(t, dev, true, withReplica(func() train.Backend { return rep }), nil)
			sameRun(t, native, host)
			if host.scaler.Scale != 0 {
				// The GradScaler on each replica's device: no flag read.
				if sc := host.scaler; sc.Skipped == 0 || sc.Skipped == 12 {
					t.Fatalf("scaler %+v: want steps skipped and taken", sc)
				}
				if dev.Unscales+rep.Unscales != 0 || dev.ScalerReads == 0 || rep.ScalerReads != 0 {
					t.Errorf("finite flags read %d and %d times; scaler reads %d (first device) and %d (replica): want none, some, none", dev.Unscales, rep.Unscales, dev.ScalerReads, rep.ScalerReads)
				}
			}
			calls := new(atomic.Int64)
			own := func() train.Backend { return reducingRef{train.NewDeviceReference(o), calls} }
			sameRun(t, trainDevice(t, own(), true, withReplica(own), nil), host)
			if calls.Load() == 0 {
				t.Fatal("the backend's own all-reduce was never called")
			}
		})
	}
}

// ddpRun is one rank's outcome of trainDDP.
type ddpRun struct {
	weights [][]float32
	losses  []float64
	eval    train.Metrics
	bound   bool // the parameters were bound to a device state at every step
}

// trainDDP trains toyNet for two epochs as n ranks of a local group, each
// on the backend open makes, and returns each rank's weights.
func trainDDP(n int, open func() train.Backend, setup func(tr *train.Trainer)) ([]ddpRun, error) {
	comms := collective.NewLocal(n)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	runs, errs := make([]ddpRun, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[r], errs[r] = trainRank(open(), comms[r], setup)
			if errs[r] != nil {
				comms[r].Close() // the other ranks fail instead of waiting
			}
		}()
	}
	wg.Wait()
	return runs, errors.Join(errs...)
}

func trainRank(b train.Backend, comm collective.Comm, setup func(tr *train.Trainer)) (ddpRun, error) {
	net, err := train.NewThinNet(b, toyNet, 5)
	if err != nil {
		return ddpRun{}, err
	}
	defer net.Close()
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 1e-4}, train.Constant(0.05), 16, 3)
	defer tr.Close()
	if setup != nil {
		setup(tr)
	}
	if err := tr.Distribute(comm, 256); err != nil { // several buckets a step
		return ddpRun{}, err
	}
	r := ddpRun{bound: true}
	for range 2 {
		_, err := tr.TrainEpoch(context.Background(), toyData(96, 6), func(s train.StepResult) error {
			if v, _ := net.Params()[0].Tensors(); v == nil {
				r.bound = false
			}
			if s.LossSteps > 0 {
				r.losses = append(r.losses, s.Loss)
			}
			return nil
		})
		if err != nil {
			return r, err
		}
	}
	if r.eval, err = tr.Evaluate(context.Background(), toyData(40, 9), 16); err != nil {
		return r, err
	}
	r.eval.Seconds = 0
	r.weights = weights(net)
	return r, nil
}

// DDP ranks on a device state (gradient tensors summed bucket by bucket
// through the host fallback, or the backend's own all-reduce) train to
// the bits of the host path's ranks, and evaluate alike.
func TestDeviceDistributedMatchesHost(t *testing.T) {
	for _, c := range stepVariants {
		t.Run(c.name, func(t *testing.T) {
			o := train.BackendOptions{Threads: 1, Precision: c.prec}
			host, err := trainDDP(2, func() train.Backend { return train.NewReference(o) }, c.setup)
			if err != nil {
				t.Fatal(err)
			}
			calls, asked := new(atomic.Int64), new(atomic.Int64)
			for name, open := range map[string]func() train.Backend{
				"host fallback":    func() train.Backend { return train.NewDeviceReference(o) },
				"backend's own":    func() train.Backend { return reducingRef{train.NewDeviceReference(o), calls} },
				"backend declines": func() train.Backend { return decliningRef{train.NewDeviceReference(o), asked} },
			} {
				native, err := trainDDP(2, open, c.setup)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for r := range native {
					what := fmt.Sprintf("%s, rank %d", name, r)
					if !native[r].bound || host[r].bound {
						t.Fatalf("%s: bound to a device state: %v (host path %v)", what, native[r].bound, host[r].bound)
					}
					sameBits(t, what+": weights", native[r].weights, host[r].weights)
					if fmt.Sprint(native[r].losses) != fmt.Sprint(host[r].losses) || native[r].eval != host[r].eval {
						t.Fatalf("%s: losses %v eval %+v, want %v %+v", what, native[r].losses, native[r].eval, host[r].losses, host[r].eval)
					}
				}
			}
			if calls.Load() == 0 || asked.Load() == 0 {
				t.Fatalf("the backend's own all-reduce called %d times, a declining backend asked %d times: want both", calls.Load(), asked.Load())
			}
		})
	}
}

// Evaluation between epochs on a device state runs the device's ops and
// loss: one read of the loss's sums, and no other synchronisation (the
// state is bound for it and released without a pull), with the host
// evaluation's bits; ZeroGrad trains on the device state.
func TestDeviceEvaluationReadsOnce(t *testing.T) {
	evalOn := func(b train.Backend, zero bool) (train.Metrics, [][]float32) {
		net, err := train.NewThinNet(b, toyNet, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 16, 3)
		defer tr.Close()
		tr.ZeroGrad = zero
		bound := true
		if _, err := tr.TrainEpoch(context.Background(), toyData(96, 6), func(train.StepResult) error {
			v, _ := net.Params()[0].Tensors()
			bound = bound && v != nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		dev, isDev := b.(*train.DeviceReference)
		if isDev && !bound {
			t.Fatalf("zero-grad %v: a step ran on the host path", zero)
		}
		var syncs, reads int
		if isDev {
			syncs, reads = dev.Syncs, dev.LossReads
		}
		m, err := tr.Evaluate(context.Background(), toyData(40, 9), 16) // 3 batches
		if err != nil {
			t.Fatal(err)
		}
		if isDev && (dev.LossReads-reads != 1 || dev.Syncs-syncs != 1) {
			t.Fatalf("an evaluation read the loss %d times and synchronised %d times, want 1 and 1", dev.LossReads-reads, dev.Syncs-syncs)
		}
		m.Seconds = 0
		return m, weights(net)
	}
	o := train.BackendOptions{Threads: 1}
	for _, zero := range []bool{false, true} {
		hm, hw := evalOn(train.NewReference(o), zero)
		dm, dw := evalOn(train.NewDeviceReference(o), zero)
		sameBits(t, "weights", dw, hw)
		if dm != hm || dm.Samples != 40 {
			t.Fatalf("zero-grad %v: device evaluation %+v, host %+v", zero, dm, hm)
		}
	}
}

// failingLoss is DeviceReference whose loss fails at its third batch.
type failingLoss struct{ *train.DeviceReference }

func (f failingLoss) NewLoss(s train.LossSpec) (train.LossOp, error) {
	op, err := f.DeviceReference.NewLoss(s)
	return &failingOp{LossOp: op}, err
}

type failingOp struct {
	train.LossOp
	n int
}

func (o *failingOp) Forward(logits train.Tensor, labels []int, scale float64) (train.Tensor, error) {
	if o.n++; o.n == 3 {
		return nil, errors.New("injected loss failure")
	}
	return o.LossOp.Forward(logits, labels, scale)
}

// A replica failing mid-step on a device state ends the epoch with its
// error: the other device's all-reduce does not wait for it forever.
func TestDeviceReplicaFailureEnds(t *testing.T) {
	o := train.BackendOptions{Threads: 1}
	b := train.NewDeviceReference(o)
	net, err := train.NewThinNet(b, toyNet, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	rb := failingLoss{train.NewDeviceReference(o)}
	rn, err := train.NewThinNet(rb, toyNet, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 16, 3)
	defer tr.Close()
	if err := tr.AddReplica(rb, rn); err != nil {
		t.Fatal(err)
	}
	steps := 0
	_, err = tr.TrainEpoch(context.Background(), toyData(96, 6), func(train.StepResult) error { steps++; return nil })
	if err == nil || !strings.Contains(err.Error(), "device 1: injected loss failure") || steps != 2 {
		t.Fatalf("after %d steps: %v", steps, err)
	}
}

package train

import (
	"errors"
	"fmt"
	"sync"

	"github.com/faster-training/faster/collective"
)

// The trainer's side of State: binding a network's tensors to the
// backend's State (or the host adapter), and the steps' use of it.

// bindState makes t.state for the trainer's Opt and EMA: the backend's
// own when every device's backend is a ParamStore (replicas and ranks
// then sum their gradient tensors through AllReduceOp, ZeroGrad runs on
// the state when it is a GradAccumulator; SyncBN's layers run on the
// host), else the host adapter. A state bound for another Opt or EMA is
// pulled and replaced.
func (t *Trainer) bindState() error {
	if t.state != nil && t.stateOpt == t.Opt && t.stateEMA == t.EMA && t.stateScaler == t.Scaler {
		return nil
	}
	if err := t.unbindState(); err != nil {
		return err
	}
	if t.nativeOK() {
		err := t.bindNative()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errHostPath) {
			return err
		}
	}
	params, buffers := t.devs[0].params, t.Net.Buffers()
	all := append(params[:len(params):len(params)], buffers...)
	t.state, t.native = &hostState{params: params, all: all, ema: t.EMA}, false
	t.stateOpt, t.stateEMA, t.stateScaler = t.Opt, t.EMA, t.Scaler
	return nil
}

// errHostPath: a device state cannot take this configuration; the host
// adapter trains it.
var errHostPath = errors.New("train: the host path trains this")

// nativeOK reports whether every device's backend keeps state on its
// device and no layer synchronises BatchNorm statistics (SyncBN runs on
// the host's slices).
func (t *Trainer) nativeOK() bool {
	for _, d := range t.devs {
		if _, ok := d.b.(ParamStore); !ok {
			return false
		}
		synced := false
		Walk(d.net, func(l Layer) {
			if bn, ok := l.(*BatchNorm2D); ok && bn.Sync != nil {
				synced = true
			}
		})
		if synced {
			return false
		}
	}
	return true
}

// bindNative makes each device's State (the first with the EMA; every
// one with the optimiser's momentum, which the first alone pulls back),
// binds the Params' tensors and, with several devices, each device's
// all-reduce over a local group of them. errHostPath: ZeroGrad with a
// state that is no GradAccumulator.
func (t *Trainer) bindNative() (err error) {
	defer func() {
		if err != nil {
			t.releaseNative()
		}
	}()
	for i, d := range t.devs {
		var e *EMA
		if i == 0 {
			e = t.EMA
		}
		st, err := d.b.(ParamStore).NewState(d.params, d.net.Buffers(), t.Opt, e)
		if err != nil {
			return fmt.Errorf("train: %s: device state: %w", d.b.Name(), err)
		}
		d.state = st
		if _, ok := st.(GradAccumulator); t.ZeroGrad && i == 0 && !ok {
			return errHostPath
		}
		for j, p := range append(d.params[:len(d.params):len(d.params)], d.net.Buffers()...) {
			p.dv, p.dg = st.Tensors(j)
			if p.dv == nil || (p.Grad != nil) != (p.dg != nil) {
				return fmt.Errorf("train: %s: device state has no tensors for %s", d.b.Name(), p.Name)
			}
		}
	}
	if len(t.devs) > 1 {
		comms := collective.NewLocal(len(t.devs))
		for i, d := range t.devs {
			d.comm = comms[i]
			if d.reduce, err = NewAllReduce(d.b, comms[i]); err != nil {
				return err
			}
		}
	}
	if t.dist != nil {
		if err := t.dist.bindNative(t.Backend); err != nil {
			return err
		}
	}
	t.state, t.native = t.devs[0].state, true
	t.stateOpt, t.stateEMA, t.stateScaler = t.Opt, t.EMA, t.Scaler
	t.emaHave = t.EMA != nil && t.EMA.Values != nil
	return t.bindScaler()
}

// bindScaler keeps the trainer's GradScaler on the devices when every
// device's state is a ScalerState whose loss op reads its scale there
// (ScaledLossOp): each device gets its copy of t.Scaler (d.scaled).
// Replicas and ranks unscale gradients already
// summed over them, so their copies stay alike.
func (t *Trainer) bindScaler() error {
	if t.Scaler == nil {
		return nil
	}
	for _, d := range t.devs {
		_, ok := d.state.(ScalerState)
		_, scaledLoss := d.loss.(ScaledLossOp)
		if !ok || !scaledLoss {
			return nil
		}
	}
	for _, d := range t.devs {
		if err := d.state.(ScalerState).PushScaler(t.Scaler); err != nil {
			return fmt.Errorf("train: %s: the GradScaler on the device: %w", d.b.Name(), err)
		}
		d.scaled = d.state.(ScalerState)
	}
	return nil
}

// scaled is the first device's GradScaler on the device (bindScaler), or
// nil: the GradScaler, if any, is the host's.
func (t *Trainer) scaled() ScalerState { return t.devs[0].scaled }

// scaledStep is the GradScaler's unscale, the optimiser's step and the
// scale's update on each device's scaler (d.scaled): the step skipped
// there when a gradient is not finite; nothing read back.
func (t *Trainer) scaledStep(lr float64) error {
	return t.onStates(func(st State) error {
		ss := st.(ScalerState)
		if err := ss.UnscaleScaled(); err != nil {
			return err
		}
		return ss.SGDStepScaled(t.Opt, lr)
	})
}

// readScaler reads the device's GradScaler into t.Scaler when read (a
// step that reads the loss) or at every step with an EMA (which skips
// what the scaler skipped), and reports whether a step was skipped since
// the last reading; without a scaler on the device, or between
// readings, it reads nothing and reports false.
func (t *Trainer) readScaler(read bool) (bool, error) {
	ss := t.scaled()
	if ss == nil || !(read || t.EMA != nil) {
		return false, nil
	}
	before := t.Scaler.Skipped
	if err := ss.PullScaler(t.Scaler); err != nil {
		return false, fmt.Errorf("train: reading the GradScaler: %w", err)
	}
	return t.Scaler.Skipped != before, nil
}

// releaseNative unbinds every device's tensors and releases its state,
// all-reduce and local group (nothing pulled).
func (t *Trainer) releaseNative() {
	for _, d := range t.devs {
		for _, p := range append(d.params[:len(d.params):len(d.params)], d.net.Buffers()...) {
			p.dv, p.dg = nil, nil
		}
		if d.reduce != nil {
			d.reduce.Close()
			d.reduce = nil
		}
		if d.comm != nil {
			d.comm.Close()
			d.comm = nil
		}
		if d.state != nil {
			d.state.Release()
			d.state = nil
		}
	}
	if t.dist != nil {
		t.dist.releaseNative()
	}
	for _, d := range t.devs {
		d.scaled = nil
	}
}

// unbindState pulls a device state into the host mirrors and releases
// it; the next step binds again from the host values.
func (t *Trainer) unbindState() error {
	if t.state == nil {
		return nil
	}
	err := t.pullState()
	if t.native {
		t.releaseNative()
	} else {
		t.state.Release()
	}
	t.state, t.native, t.stateOpt, t.stateEMA, t.stateScaler = nil, false, nil, nil, nil
	return err
}

// pullState copies a device state into the host mirrors (Param.Value,
// Opt.Velocity, EMA.Values); nothing for the host adapter.
func (t *Trainer) pullState() error {
	if !t.native {
		return nil
	}
	if err := t.state.Pull(t.stateOpt, t.stateEMA); err != nil {
		return fmt.Errorf("train: reading the device state: %w", err)
	}
	if ss := t.scaled(); ss != nil {
		if err := ss.PullScaler(t.stateScaler); err != nil {
			return fmt.Errorf("train: reading the GradScaler: %w", err)
		}
	}
	for i, d := range t.devs[1:] { // a replica's buffers are its own
		if err := d.state.Pull(nil, nil); err != nil {
			return fmt.Errorf("train: reading device %d's state: %w", i+1, err)
		}
	}
	return nil
}

// pushState copies the host mirrors into a device state.
func (t *Trainer) pushState() error {
	if !t.native {
		return nil
	}
	if err := t.state.Push(t.stateOpt, t.stateEMA); err != nil {
		return fmt.Errorf("train: writing the device state: %w", err)
	}
	for _, d := range t.devs {
		if d.scaled != nil {
			if err := d.scaled.PushScaler(t.stateScaler); err != nil {
				return fmt.Errorf("train: writing the GradScaler: %w", err)
			}
		}
	}
	for i, d := range t.devs[1:] {
		if err := d.state.Push(t.stateOpt, nil); err != nil {
			return fmt.Errorf("train: writing device %d's state: %w", i+1, err)
		}
	}
	return nil
}

// updateEMA folds the weights into t.EMA after a step.
func (t *Trainer) updateEMA() error {
	e := t.EMA
	if e == nil {
		return nil
	}
	have := e.Values != nil
	if t.native {
		have = t.emaHave
	}
	decay, first := e.next(have)
	if err := t.state.EMAUpdate(decay, first); err != nil {
		return err
	}
	e.counted(first)
	t.emaHave = true
	return nil
}

// swapEMA exchanges the weights with their average (Evaluate's).
func (t *Trainer) swapEMA() error {
	if t.native {
		if !t.emaHave {
			return nil
		}
		return t.state.EMASwap()
	}
	t.EMA.Swap(t.Net)
	return nil
}

// onStates runs f on the state of each device, each on the device's own
// goroutine (the trainer's for the first), and joins their errors: the
// replicas of a device state each update their own copy of the weights
// with the same summed gradients (so the same bits). On the host path,
// or with one device, f runs once, on t.state.
func (t *Trainer) onStates(f func(State) error) error {
	if !t.native || len(t.devs) == 1 {
		return f(t.state)
	}
	errs := make([]error, len(t.devs))
	done := make(chan struct{}, len(t.devs))
	for i, d := range t.devs[1:] {
		d.jobs <- func() {
			if err := f(d.state); err != nil {
				errs[i+1] = fmt.Errorf("device %d: %w", i+1, err)
			}
			done <- struct{}{}
		}
	}
	errs[0] = f(t.state)
	for range t.devs[1:] {
		<-done
	}
	return errors.Join(errs...)
}

// unscale is the GradScaler's unscale and finite check on every
// device's state; the step is finite when every device's is.
func (t *Trainer) unscale(inv float32) (bool, error) {
	finite := make([]bool, len(t.devs))
	i := 0
	var mu sync.Mutex
	err := t.onStates(func(st State) error {
		ok, err := st.Unscale(inv)
		mu.Lock()
		finite[i] = ok
		i++
		mu.Unlock()
		return err
	})
	for _, ok := range finite[:i] {
		if !ok {
			return false, err
		}
	}
	return true, err
}

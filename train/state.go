package train

import "fmt"

// The trainer's side of State: binding a network's tensors to the
// backend's State (or the host adapter), and the steps' use of it.

// bindState makes t.state for the trainer's Opt and EMA: the backend's
// own when it is a ParamStore and the trainer drives one device alone
// (replicas, ranks and ZeroGrad's swapped gradients run on the host),
// else the host adapter. A state bound for another Opt or EMA is pulled
// and replaced.
func (t *Trainer) bindState() error {
	if t.state != nil && t.stateOpt == t.Opt && t.stateEMA == t.EMA {
		return nil
	}
	if err := t.unbindState(); err != nil {
		return err
	}
	params, buffers := t.devs[0].params, t.Net.Buffers()
	ps, ok := t.Backend.(ParamStore)
	if !ok || len(t.devs) > 1 || t.dist != nil || t.ZeroGrad {
		all := append(params[:len(params):len(params)], buffers...)
		t.state, t.native = &hostState{params: params, all: all, ema: t.EMA}, false
		t.stateOpt, t.stateEMA = t.Opt, t.EMA
		return nil
	}
	st, err := ps.NewState(params, buffers, t.Opt, t.EMA)
	if err != nil {
		return fmt.Errorf("train: %s: device state: %w", t.Backend.Name(), err)
	}
	for i, p := range append(params[:len(params):len(params)], buffers...) {
		p.dv, p.dg = st.Tensors(i)
		if p.dv == nil || (p.Grad != nil) != (p.dg != nil) {
			st.Release()
			t.unbindTensors()
			return fmt.Errorf("train: %s: device state has no tensors for %s", t.Backend.Name(), p.Name)
		}
	}
	t.state, t.native = st, true
	t.stateOpt, t.stateEMA = t.Opt, t.EMA
	t.emaHave = t.EMA != nil && t.EMA.Values != nil
	return nil
}

// unbindTensors makes every parameter and buffer its host slices again.
func (t *Trainer) unbindTensors() {
	ps := t.devs[0].params
	for _, p := range append(ps[:len(ps):len(ps)], t.Net.Buffers()...) {
		p.dv, p.dg = nil, nil
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
		t.unbindTensors()
	}
	t.state.Release()
	t.state, t.native, t.stateOpt, t.stateEMA = nil, false, nil, nil
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

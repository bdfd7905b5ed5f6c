package train

// EMA is an exponential moving average of a network's weights, kept for
// evaluation, with the semantics of torch.optim.swa_utils.AveragedModel
// (use_buffers=True) given avg_fn = Decay·avg + (1−Decay)·p: the first
// Update copies the network, each later one moves the average towards it.
// It averages the buffers (BatchNorm's running statistics) as well as
// the parameters — timm's ModelEmaV2 does the same — so the averaged
// weights are evaluated with statistics that moved with them, and no
// pass over the data is needed to recompute them (swa_utils.update_bn).
type EMA struct {
	Decay float64
	// Warmup lowers the decay of early updates as TensorFlow's
	// ExponentialMovingAverage with num_updates does: update n+1 (n
	// updates before it) decays by min(Decay, (1+n)/(10+n)), so the
	// average forgets the first, untrained weights quickly. (With
	// AveragedModel: avg_fn given num_averaged n.)
	Warmup bool
	// Updates counts the Update calls (AveragedModel's n_averaged).
	Updates int
	// Values holds the average, one slice per tensor: the network's
	// Params then its Buffers, in order. Nil before the first Update.
	Values [][]float32
}

// emaTensors lists net's tensors in the order EMA keeps them.
func emaTensors(net Layer) []*Param { return append(net.Params(), net.Buffers()...) }

// Update folds net's current weights into the average.
func (e *EMA) Update(net Layer) {
	decay, first := e.next(e.Values != nil)
	e.update(emaTensors(net), decay, first)
	e.counted(first)
}

// next is the decay of the next update and whether it is the first (the
// average is then a copy): have says whether an average exists.
func (e *EMA) next(have bool) (decay float64, first bool) {
	if !have {
		return 0, true
	}
	decay = e.Decay
	if e.Warmup {
		n := float64(e.Updates)
		decay = min(decay, (1+n)/(10+n))
	}
	return decay, false
}

// counted records one more update.
func (e *EMA) counted(first bool) {
	if first {
		e.Updates = 1
		return
	}
	e.Updates++
}

// update folds ts into the average with decay (first: copies them).
func (e *EMA) update(ts []*Param, decay float64, first bool) {
	if first {
		e.Values = make([][]float32, len(ts))
		for i, p := range ts {
			e.Values[i] = append([]float32(nil), p.Value...)
		}
		return
	}
	d, r := float32(decay), float32(1-decay)
	for i, p := range ts {
		avg := e.Values[i]
		for j, v := range p.Value {
			avg[j] = d*avg[j] + r*v
		}
	}
}

// Swap exchanges net's weights with the average (a second Swap restores
// them); it does nothing before the first Update.
func (e *EMA) Swap(net Layer) { e.swap(emaTensors(net)) }

func (e *EMA) swap(ts []*Param) {
	if e.Values == nil {
		return
	}
	for i, p := range ts {
		avg := e.Values[i]
		for j, v := range p.Value {
			p.Value[j], avg[j] = avg[j], v
		}
	}
}

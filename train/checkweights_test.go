package train_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/faster-training/faster/train"
)

// countingRef is DeviceReference whose states count their finite checks
// of the weights.
type countingRef struct {
	*train.DeviceReference
	checks int
	state  train.State
}

func (c *countingRef) NewState(params, buffers []*train.Param, opt *train.SGD, e *train.EMA) (train.State, error) {
	s, err := c.DeviceReference.NewState(params, buffers, opt, e)
	if err != nil {
		return nil, err
	}
	c.state = &countingState{State: s, c: c}
	return c.state, nil
}

type countingState struct {
	train.State
	c *countingRef
}

func (s *countingState) NonFinite(values bool) ([]int, error) {
	if values {
		s.c.checks++
	}
	return s.State.NonFinite(values)
}

// On a device state the updated weights are checked at the loss's reads
// only (every LossEvery steps and at the epoch's last), so that no other
// step waits for the device; a weight made non-finite between reads still
// stops training, at the next read, naming the parameter.
func TestDeviceStateChecksWeightsAtReads(t *testing.T) {
	for _, every := range []int{1, 4} {
		c := &countingRef{DeviceReference: train.NewDeviceReference(train.BackendOptions{})}
		trainDevice(t, c, true, func(tr *train.Trainer) { tr.LossEvery = every }, nil)
		// 96 images, batch 16: 6 steps an epoch, 2 epochs.
		want := 2 * 6
		if every == 4 {
			want = 2 * 2 // steps 4 and 6
		}
		if c.checks != want {
			t.Errorf("LossEvery %d: %d weight checks in 12 steps, want %d", every, c.checks, want)
		}
	}

	c := &countingRef{DeviceReference: train.NewDeviceReference(train.BackendOptions{})}
	net, err := train.NewThinNet(c, toyNet, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	tr := train.NewTrainer(c, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 16, 3)
	defer tr.Close()
	tr.LossEvery = 4
	stoppedAt := 0
	_, err = tr.TrainEpoch(context.Background(), toyData(96, 6), func(s train.StepResult) error {
		stoppedAt = s.Step
		if s.Step == 1 { // a weight goes bad after the first step
			v, _ := c.state.Tensors(0)
			n := 1
			for _, d := range v.Shape() {
				n *= d
			}
			w := make([]float32, n)
			if err := v.Read(w); err != nil {
				return err
			}
			w[0] = float32(math.Inf(1))
			return v.Write(w)
		}
		return nil
	})
	if !errors.Is(err, train.ErrNonFinite) || stoppedAt != 3 {
		t.Errorf("a weight made infinite after step 1: %v after step %d; want ErrNonFinite at step 4's read", err, stoppedAt)
	}
}

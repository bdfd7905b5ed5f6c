package serve

import (
	"errors"
	"fmt"

	"github.com/faster-training/faster/loader"
)

// A Source may also take the consumer's seed and order (a *loader.Loader
// does): Serve applies the 'S' and 'O' frames sent before an 'E' to its
// epoch through these.
type (
	seeder interface {
		SetSeed(uint64)
	}
	orderer interface {
		SetOrder([]int) error
	}
)

var (
	_ seeder  = (*loader.Loader)(nil)
	_ orderer = (*loader.Loader)(nil)
)

// prepare applies the seed and the order the consumer sent before req's
// epoch; an error refuses the epoch ('N'), the session going on.
func (s *session) prepare(req epochReq) error {
	if req.seed != nil {
		sd, ok := s.src.(seeder)
		if !ok {
			return errors.New("serve: this source takes no seed")
		}
		sd.SetSeed(*req.seed)
	}
	switch {
	case req.order != nil && s.o.Sampler != loader.SamplerIndices:
		return fmt.Errorf("an order of %d positions for epoch %d: this server was started without --sampler %s (the client's sampler= starts it so)", len(req.order), req.epoch, loader.SamplerIndices)
	case req.order == nil && s.o.Sampler == loader.SamplerIndices:
		return fmt.Errorf("epoch %d: no order sent for it: --sampler %s serves the order the client's sampler gives each epoch", req.epoch, loader.SamplerIndices)
	case req.order != nil:
		o, ok := s.src.(orderer)
		if !ok {
			return errors.New("serve: this source takes no order")
		}
		return o.SetOrder(req.order)
	}
	return nil
}

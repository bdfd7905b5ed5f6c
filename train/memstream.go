package train

import (
	"context"
	"iter"
)

// In-memory data is a Stream too: the engine trains and evaluates from
// streams only, and these two turn a Dataset into one.

// StreamOf returns data as the trainer's training stream: epoch e in
// the trainer's order (Order), each step this rank's part of a global
// batch of t.Batch, the epoch data.Len()/t.Batch steps long (the last
// partial batch dropped), as every rank computes alike. Its buffers are
// reused from one batch to the next.
func (t *Trainer) StreamOf(data Dataset) Stream {
	rank := 0
	if t.dist != nil {
		rank = t.dist.comm.Rank()
	}
	return &memTrain{d: data, t: t, rank: rank}
}

type memTrain struct {
	d    Dataset
	t    *Trainer
	rank int
}

func (s *memTrain) Shape() (c, h, w int) { return s.d.Shape() }
func (s *memTrain) Len() int             { return s.Steps() * s.t.LocalBatch() }
func (s *memTrain) Steps() int {
	if s.t.Batch <= 0 {
		return 0
	}
	return s.d.Len() / s.t.Batch
}

func (s *memTrain) Epoch(ctx context.Context, e, skip int) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		c, h, w := s.d.Shape()
		local := s.t.LocalBatch()
		order := s.t.Order(s.d.Len(), e)
		// Images on devices that normalise bytes themselves: the bytes as
		// they are (a quarter of the bytes to copy, no float pass here).
		// *Images only: a type that embeds it to change Fill keeps Fill.
		im, bytes := s.d.(*Images)
		bytes = bytes && s.t.normalizesOnDevice()
		var x []float32
		var pix []byte
		if bytes {
			pix = make([]byte, local*c*h*w)
		} else {
			x = make([]float32, local*c*h*w)
		}
		y := make([]int, local)
		for k := skip; k < s.Steps(); k++ {
			if err := ctx.Err(); err != nil {
				yield(Batch{}, err)
				return
			}
			lo := k*s.t.Batch + s.rank*local
			var b Batch
			if bytes {
				mean, std := im.fillBytes(order[lo:lo+local], pix, y)
				b = Batch{Y: y, Bytes: ByteBatch{Pixels: pix, N: local, H: h, W: w, C: c, Mean: mean, Std: std, CHW: true}}
			} else {
				s.d.Fill(order[lo:lo+local], x, y)
				b = Batch{X: x, Y: y}
			}
			if !yield(b, nil) {
				return
			}
		}
	}
}

// EvalStream returns data as an evaluation stream of rank's contiguous
// part of ranks (the whole of it for one rank), in order, in batches of
// batch (the last one smaller). Every sample is in exactly one rank's
// part, so metrics summed over the ranks are the whole set's.
func EvalStream(data Dataset, batch, rank, ranks int) Stream {
	ranks = max(ranks, 1)
	n := data.Len()
	return &memEval{d: data, batch: max(batch, 1), lo: n * rank / ranks, hi: n * (rank + 1) / ranks}
}

type memEval struct {
	d      Dataset
	batch  int
	lo, hi int
}

func (s *memEval) Shape() (c, h, w int) { return s.d.Shape() }
func (s *memEval) Len() int             { return s.hi - s.lo }
func (s *memEval) Steps() int           { return (s.Len() + s.batch - 1) / s.batch }

func (s *memEval) Epoch(ctx context.Context, _, skip int) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		c, h, w := s.d.Shape()
		idx := make([]int, 0, s.batch)
		x, y := make([]float32, s.batch*c*h*w), make([]int, s.batch)
		for lo := s.lo + skip*s.batch; lo < s.hi; lo += s.batch {
			if err := ctx.Err(); err != nil {
				yield(Batch{}, err)
				return
			}
			n := min(s.batch, s.hi-lo)
			idx = idx[:0]
			for i := range n {
				idx = append(idx, lo+i)
			}
			s.d.Fill(idx, x[:n*c*h*w], y[:n])
			if !yield(Batch{X: x[:n*c*h*w], Y: y[:n]}, nil) {
				return
			}
		}
	}
}

// normalizesOnDevice reports whether every device of the trainer
// normalises 8-bit batches itself (ByteInputBackend): Images then give
// their bytes as they are.
func (t *Trainer) normalizesOnDevice() bool {
	for _, d := range t.devs {
		if _, ok := d.b.(ByteInputBackend); !ok {
			return false
		}
	}
	return true
}

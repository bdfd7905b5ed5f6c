package pipeline

import (
	"context"
	"errors"
	"io"
	"iter"
)

// SliceDataset yields the elements of a slice in order. See FromSlice.
type SliceDataset[T any] struct {
	stage
	s    []T
	size func(T) int
}

// FromSlice returns a source over s (not copied: do not modify s while an
// epoch runs). Its role is RoleIO.
func FromSlice[T any](s []T) *SliceDataset[T] {
	d := &SliceDataset[T]{s: s}
	d.init("slice", RoleIO)
	return d
}

// Named sets the stage name shown in Stats.
func (d *SliceDataset[T]) Named(name string) *SliceDataset[T] { d.name = name; return d }

// Bytes sets the size function summed into Stats' Bytes.
func (d *SliceDataset[T]) Bytes(size func(T) int) *SliceDataset[T] { d.size = size; return d }

// Iter implements Dataset.
func (d *SliceDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		d.begin()
		defer d.end()
		m := meter{s: &d.stage}
		defer m.flush()
		done := ctx.Done()
		for _, x := range d.s {
			select {
			case <-done:
				var zero T
				yield(zero, ctxErr(ctx))
				return
			default:
			}
			t1 := nanotime()
			if d.size != nil {
				m.bytes += int64(d.size(x))
			}
			m.items++
			if !yield(x, nil) {
				return
			}
			m.blockedOut += nanotime() - t1
			m.tick()
		}
	}
}

// FuncDataset yields f(ctx, 0), f(ctx, 1), … until f returns io.EOF. See
// FromFunc.
type FuncDataset[T any] struct {
	stage
	f    func(ctx context.Context, i int) (T, error)
	size func(T) int
}

// FromFunc returns a source that calls f with i = 0, 1, 2, … in each epoch
// and yields its results, until f returns io.EOF (which ends the epoch
// cleanly) or another error (which is yielded). f is called from the
// goroutine ranging over the sequence, never concurrently within an epoch.
// Its role is RoleIO; set another with Role.
func FromFunc[T any](f func(ctx context.Context, i int) (T, error)) *FuncDataset[T] {
	d := &FuncDataset[T]{f: f}
	d.init("func", RoleIO)
	return d
}

// Named sets the stage name shown in Stats.
func (d *FuncDataset[T]) Named(name string) *FuncDataset[T] { d.name = name; return d }

// Bytes sets the size function summed into Stats' Bytes.
func (d *FuncDataset[T]) Bytes(size func(T) int) *FuncDataset[T] { d.size = size; return d }

// Role sets the stage's role for the verdict.
func (d *FuncDataset[T]) Role(r Role) *FuncDataset[T] { d.role = r; return d }

// Iter implements Dataset.
func (d *FuncDataset[T]) Iter(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		last := d.begin()
		defer d.end()
		m := meter{s: &d.stage}
		defer m.flush()
		done := ctx.Done()
		var zero T
		for i := 0; ; i++ {
			select {
			case <-done:
				yield(zero, ctxErr(ctx))
				return
			default:
			}
			x, err := d.f(ctx, i)
			t1 := nanotime()
			m.busy += t1 - last
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(zero, err)
				return
			}
			var ok bool
			if last, ok = emit(&m, yield, x, d.size, t1); !ok {
				return
			}
		}
	}
}

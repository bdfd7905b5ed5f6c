package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/loader"
)

func openLoader(t *testing.T, root string) *loader.Loader {
	t.Helper()
	l, err := loader.Open(root, loader.Options{Batch: 4, Seed: 3, Resolution: 16, Transform: loader.Eval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Consume takes every batch of the epochs asked for, in order: the keys
// it lists are the digest's, a fresh loader gives the same digest, and a
// step budget stops across an epoch's end.
func TestConsume(t *testing.T) {
	root := testenv.WriteFolder(t, 2, 5) // 10 images: batches of 4, 4, 2
	ctx := context.Background()
	var keys bytes.Buffer
	var progressed int64
	c, err := Consume(ctx, openLoader(t, root).IterEpoch, ConsumeOptions{Epochs: 2, Keys: &keys, Progress: func(n, _ int64) { progressed += n }})
	if err != nil {
		t.Fatal(err)
	}
	if c.Epochs != 2 || c.Images != 20 || c.Batches != 6 || c.Repeats != 0 || c.Bytes <= 0 || progressed != 20 {
		t.Fatalf("consumed %+v (progress %d), want 2 epochs of 10 images in 3 batches", c, progressed)
	}
	h := sha256.Sum256(keys.Bytes())
	if got := strings.Count(keys.String(), "\n"); got != 20 || hex.EncodeToString(h[:]) != c.Digest {
		t.Errorf("%d keys listed, digest %s, want 20 and the keys' digest %x", got, c.Digest, h)
	}
	again, err := Consume(ctx, openLoader(t, root).IterEpoch, ConsumeOptions{Epochs: 2})
	if err != nil || again.Digest != c.Digest {
		t.Errorf("a fresh loader: digest %s %v, want %s", again.Digest, err, c.Digest)
	}
	s, err := Consume(ctx, openLoader(t, root).IterEpoch, ConsumeOptions{First: 1, Steps: 4})
	if err != nil || s.Batches != 4 || s.Epochs != 3 || s.Images != 14 {
		t.Errorf("4 steps from epoch 1: %+v %v, want 4 batches (14 images) reaching epoch 3", s, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Consume(cctx, openLoader(t, root).IterEpoch, ConsumeOptions{Epochs: 1}); err == nil {
		t.Error("a cancelled context: no error")
	}
}

// At a consumer rate, Consume owes the loader the time its images take
// and sleeps it off; an oversleep is owed back (the clock is injected).
func TestConsumeRate(t *testing.T) {
	root := testenv.WriteFolder(t, 2, 5)
	clock := time.Unix(0, 0)
	var slept []time.Duration
	o := ConsumeOptions{Epochs: 1, Rate: 100,
		Now: func() time.Time { return clock },
		Sleep: func(d time.Duration) {
			slept = append(slept, d)
			clock = clock.Add(d + 5*time.Millisecond) // 5 ms over every time
		}}
	if _, err := Consume(context.Background(), openLoader(t, root).IterEpoch, o); err != nil {
		t.Fatal(err)
	}
	// 4 images at 100/s: 40 ms; then 40 ms less the 5 ms overslept; then
	// 20 ms less 5.
	want := []time.Duration{40 * time.Millisecond, 35 * time.Millisecond, 15 * time.Millisecond}
	if len(slept) != len(want) {
		t.Fatalf("slept %v, want %v", slept, want)
	}
	for i := range want {
		if slept[i] != want[i] {
			t.Errorf("sleep %d: %v, want %v", i, slept[i], want[i])
		}
	}
}

// ConsumeStaged counts a batch-decode stage's batches as Consume counts
// the CPU path's: the same samples in the same order (digest), images,
// batches and bytes, every batch released (Close then frees the ring's buffers).
func TestConsumeStaged(t *testing.T) {
	root := testenv.WriteFolder(t, 2, 5)
	ctx := context.Background()
	want, err := Consume(ctx, openLoader(t, root).IterEpoch, ConsumeOptions{Epochs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var d *loader.CPUBatchDecoder
	l, err := loader.Open(root, loader.Options{Batch: 4, Seed: 3, Resolution: 16, Transform: loader.Eval,
		NewBatchDecoder: func(loader.DecoderConfig) (loader.BatchDecoder, error) {
			d = &loader.CPUBatchDecoder{Workers: 2}
			return d, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ConsumeStaged(ctx, l.IterStaged, ConsumeOptions{Epochs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("staged: %+v\nCPU path: %+v", got, want)
	}
	if _, err := Consume(ctx, l.IterEpoch, ConsumeOptions{Epochs: 1}); !errors.Is(err, loader.ErrStaged) {
		t.Errorf("Consume over IterEpoch of a staged loader: %v, want ErrStaged", err)
	}
	if err := l.Close(); err != nil { // every batch was released: Close frees the ring
		t.Fatal(err)
	}
	if d == nil || d.Live() != 0 {
		t.Errorf("stage decoder %v: %d buffers not freed after Close", d, d.Live())
	}
}

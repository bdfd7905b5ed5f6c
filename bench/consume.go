package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"iter"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faster-training/faster/loader"
)

// ConsumeOptions say how Consume takes batches.
type ConsumeOptions struct {
	// First is the first epoch; Epochs the epochs taken from it, or, when
	// Steps > 0, Steps batches across as many epochs as they need.
	First, Epochs, Steps int
	// Rate is the images per second the consumer takes, as a trainer's
	// step would (0: as fast as they are served); Sleep waits and Now
	// reads the clock (nil: time.Sleep, time.Now).
	Rate  float64
	Sleep func(time.Duration)
	Now   func() time.Time
	// Keys, if set, gets the key of every sample served, one a line
	// (padding repeats left out), as KeyLine writes it.
	Keys io.Writer
	// Progress, if set, is told of each batch's images and bytes.
	Progress func(images, bytes int64)
}

// Consumed is what Consume counted.
type Consumed struct {
	Epochs                 int // epochs reached (First + the epochs begun)
	Images, Repeats, Bytes int64
	Batches                int64
	// Digest is the SHA-256 of the keys served, in order, each followed
	// by a newline: equal digests, the same samples in the same order.
	Digest string
}

// Consume takes batches from epochs of a loader (epoch is its IterEpoch)
// as a training loop would, releasing each, and counts them. An epoch
// that yields nothing ends it early.
func Consume(ctx context.Context, epoch func(context.Context, int) iter.Seq2[*loader.Batch, error], o ConsumeOptions) (Consumed, error) {
	return consumeServed(ctx, func(ctx context.Context, e int) iter.Seq2[served, error] {
		return func(yield func(served, error) bool) {
			for b, err := range epoch(ctx, e) {
				var s served
				if b != nil {
					s = served{b.Items, b.Valid, b.Repeats, b.Release}
				}
				if !yield(s, err) {
					return
				}
			}
		}
	}, o)
}

// ConsumeStaged is Consume over a loader's batch-decode stage (its
// IterStaged: the rows decoded by a BatchDecoder, on a GPU or its CPU
// stand-in), each batch released to the stage's ring once counted.
func ConsumeStaged(ctx context.Context, epoch func(context.Context, int) iter.Seq2[*loader.StagedBatch, error], o ConsumeOptions) (Consumed, error) {
	return consumeServed(ctx, func(ctx context.Context, e int) iter.Seq2[served, error] {
		return func(yield func(served, error) bool) {
			for b, err := range epoch(ctx, e) {
				var s served
				if b != nil {
					s = served{b.Items, b.Valid, b.Repeats, b.Release}
				}
				if !yield(s, err) {
					return
				}
			}
		}
	}, o)
}

// served is what Consume counts of a batch, whichever path made it.
type served struct {
	Items          []loader.Item
	Valid, Repeats int
	Release        func()
}

func consumeServed(ctx context.Context, epoch func(context.Context, int) iter.Seq2[served, error], o ConsumeOptions) (Consumed, error) {
	sleep, now := o.Sleep, o.Now
	if sleep == nil {
		sleep = time.Sleep
	}
	if now == nil {
		now = time.Now
	}
	var c Consumed
	h := sha256.New()
	var owed time.Duration // consumer time not yet slept
	steps := 0
	for e := o.First; o.Steps > 0 || e < o.First+o.Epochs; e++ {
		c.Epochs = e + 1
		n := 0
		for b, err := range epoch(ctx, e) {
			if err != nil {
				return c, err
			}
			n++
			var nb int64
			for i := range b.Valid {
				it := &b.Items[i]
				nb += int64(it.Bytes)
				io.WriteString(h, it.Key)
				h.Write([]byte{'\n'})
				if o.Keys != nil && i < b.Valid-b.Repeats {
					io.WriteString(o.Keys, KeyLine(it.Key))
				}
			}
			c.Images += int64(b.Valid)
			c.Repeats += int64(b.Repeats)
			c.Bytes += nb
			c.Batches++
			if o.Progress != nil {
				o.Progress(int64(b.Valid), nb)
			}
			if o.Rate > 0 {
				owed += time.Duration(float64(b.Valid) / o.Rate * float64(time.Second))
				if owed > time.Millisecond {
					t0 := now()
					sleep(owed)
					owed -= now().Sub(t0) // an oversleep is owed back
				}
			}
			b.Release()
			if steps++; o.Steps > 0 && steps >= o.Steps {
				c.Digest = hex.EncodeToString(h.Sum(nil))
				return c, nil
			}
		}
		if n == 0 {
			break
		}
	}
	c.Digest = hex.EncodeToString(h.Sum(nil))
	return c, nil
}

// KeyLine is a sample's key as a line of a list of keys: as it is, or,
// when it holds a byte that would break the line or be read back as
// another key (a newline, a carriage return, another control character,
// bytes that are not UTF-8) or starts with a double quote, Go-quoted
// (strconv.Quote), so that one line is one sample and a line starting
// with '"' is strconv.Unquote'd.
func KeyLine(key string) string {
	plain := utf8.ValidString(key) && !strings.HasPrefix(key, `"`) && !strings.ContainsFunc(key, func(r rune) bool {
		return r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029
	})
	if plain {
		return key + "\n"
	}
	return strconv.Quote(key) + "\n"
}

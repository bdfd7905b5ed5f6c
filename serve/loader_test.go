//go:build linux

package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
)

// makeTree writes a small ImageFolder of JPEGs: 3 classes of perClass
// images of varied sizes.
func makeTree(t testing.TB, perClass int) string {
	root := t.TempDir()
	for c, name := range []string{"ant", "bee", "cat"} {
		os.MkdirAll(filepath.Join(root, name), 0o755)
		for i := range perClass {
			w, h := 40+i%7*3, 30+c*5+i%3
			img := image.NewRGBA(image.Rect(0, 0, w, h))
			for y := range h {
				for x := range w {
					img.Set(x, y, color.RGBA{uint8(x*6 + i), uint8(y * 8), uint8(c*80 + i), 255})
				}
			}
			var b bytes.Buffer
			jpeg.Encode(&b, img, &jpeg.Options{Quality: 95})
			if err := os.WriteFile(filepath.Join(root, name, fmt.Sprintf("%03d.jpg", i)), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// packTree packs an ImageFolder into n TFRecord shards (with indexes and
// a manifest) and returns the directory.
func packTree(t testing.TB, folder string, n int) string {
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := shard.Pack(context.Background(), src, folder, out, shard.PackOptions{Shards: n}); err != nil {
		t.Fatal(err)
	}
	return out
}

// batchDigest is the digest both the Go tests and the Python tests compute
// of a batch: SHA-256 of its valid rows' pixels, then their labels as
// little-endian int64s, then their keys joined by NUL.
func batchDigest(pixels []byte, labels []int, keys []string) string {
	h := sha256.New()
	h.Write(pixels)
	for _, l := range labels {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(int64(l))))
	}
	h.Write([]byte(strings.Join(keys, "\x00")))
	return hex.EncodeToString(h.Sum(nil))
}

// loaderDigests runs epochs before, then epoch e, of a loader directly and
// digests each batch of epoch e.
func loaderDigests(t testing.TB, data string, lo loader.Options, before []int, e int) (digests, keys []string) {
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range before {
		for b, err := range l.IterEpoch(context.Background(), e) {
			if err != nil {
				t.Fatal(err)
			}
			b.Release()
		}
	}
	for b, err := range l.IterEpoch(context.Background(), e) {
		if err != nil {
			t.Fatal(err)
		}
		var labels []int
		var ks []string
		for _, it := range b.Items[:b.Valid] {
			labels = append(labels, it.Label)
			ks = append(ks, it.Key)
		}
		digests = append(digests, batchDigest(b.Data[:b.Valid*b.RowBytes], labels, ks))
		keys = append(keys, ks...)
		b.Release()
	}
	return digests, keys
}

// Through Serve, the consumer sees exactly what the loader makes.
func TestServeLoaderIdentical(t *testing.T) {
	data := makeTree(t, 7)
	lo := loader.Options{Transform: loader.Train, Resolution: 24, Batch: 4, Seed: 3, Workers: 2}
	want, _ := loaderDigests(t, data, lo, nil, 1)
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := ForLoader(l, lo)
	o.Dir, o.Slots = t.TempDir(), 2
	if o.DType != "float32" || fmt.Sprint(o.Shape) != "[3 24 24]" || o.Len != 21 {
		t.Fatalf("ForLoader: %+v", o)
	}
	c, done := start(t, context.Background(), l, o)
	c.attach()
	c.epoch(1)
	var got []string
	for {
		typ, p := c.recv()
		if typ == FrameEnd {
			break
		}
		r := parseReady(t, typ, p)
		got = append(got, batchDigest(c.images(r), c.labels(r), r.keys))
		c.free(r.slot)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("served digests differ from the loader's:\n got %v\nwant %v", got, want)
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Ranks of unequal size (21 samples on 2 ranks: 11 and 10) through Serve:
// both say the same steps in hello and serve that many batches of the same
// sizes, none empty; the short rank's last row is a repeat, announced in
// the ready frame and the slot header.
func TestServeRanksSameStepsWithRepeats(t *testing.T) {
	data := makeTree(t, 7)
	var sizes [2][]int
	var repeats [2]int
	for rank := range 2 {
		lo := loader.Options{Transform: loader.Eval, Resolution: 16, Batch: 4, NumShards: 2, ShardIdx: rank}
		l, err := loader.Open(data, lo)
		if err != nil {
			t.Fatal(err)
		}
		o := ForLoader(l, lo)
		o.Dir, o.Slots = t.TempDir(), 2
		c, done := start(t, context.Background(), l, o)
		if c.hello.Steps != 3 || c.hello.Samples != 11 {
			t.Fatalf("rank %d: hello says %d steps of %d samples, want 3 of 11", rank, c.hello.Steps, c.hello.Samples)
		}
		c.attach()
		c.epoch(0)
		for {
			typ, p := c.recv()
			if typ == FrameEnd {
				break
			}
			r := parseReady(t, typ, p)
			base := c.hello.HeaderBytes + int64(r.slot)*c.hello.SlotBytes
			if hdr := int(binary.LittleEndian.Uint64(c.mem[base+32:])); hdr != r.repeats {
				t.Fatalf("slot header says %d repeats, ready frame %d", hdr, r.repeats)
			}
			sizes[rank] = append(sizes[rank], r.valid)
			repeats[rank] += r.repeats
			c.free(r.slot)
		}
		c.conn.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	if fmt.Sprint(sizes[0]) != "[4 4 3]" || fmt.Sprint(sizes[1]) != "[4 4 3]" || repeats != [2]int{0, 1} {
		t.Fatalf("batch sizes %v, repeats %v; want [4 4 3] on both, repeats [0 1]", sizes, repeats)
	}
}

// The end frame's statistics carry the server's CPU time over the epoch
// (read with the injected clock at the epoch's request and after its last
// batch) and its price per 1,000 images served.
func TestServeEpochCPU(t *testing.T) {
	data := makeTree(t, 7)
	lo := loader.Options{Transform: loader.Eval, Resolution: 16, Batch: 4, Workers: 1}
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := ForLoader(l, lo)
	o.Dir, o.Slots = t.TempDir(), 2
	var calls atomic.Int64
	o.CPU = func() time.Duration { return time.Duration(calls.Add(1)) * 1500 * time.Millisecond }
	c, done := start(t, context.Background(), l, o)
	c.attach()
	for e := range 2 {
		c.epoch(e)
		for {
			typ, p := c.recv()
			if typ == FrameEnd {
				var es EpochStats
				if err := json.Unmarshal(p[endFixed:], &es); err != nil {
					t.Fatalf("epoch %d: end frame statistics: %v", e, err)
				}
				// Two reads per epoch, 1.5 s apart; 21 images.
				if es.CPUSeconds != 1.5 || es.Images != 21 || math.Abs(es.CPUPer1000-1500.0/21) > 1e-9 {
					t.Fatalf("epoch %d: cpu %v s, %d images, %v s per 1,000; want 1.5, 21, %v", e, es.CPUSeconds, es.Images, es.CPUPer1000, 1500.0/21)
				}
				break
			}
			c.free(parseReady(t, typ, p).slot)
		}
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("the CPU clock was read %d times, want 2 per epoch", n)
	}
}

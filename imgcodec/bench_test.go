package imgcodec_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/faster-training/faster/imgcodec"
)

// benchSets returns the benchmark images: real photographs of Debian's
// mate-backgrounds (1.3 to 4 Mpixel), and the same photos at ImageNet-like
// sizes (DCT-scaled by 1/4 to 320-640 px and re-encoded at quality 90).
func benchSets(b *testing.B) (names []string, sets map[string][][]byte) {
	files, _ := filepath.Glob(filepath.Join(photoDir, "*.jpg"))
	sort.Strings(files)
	if len(files) == 0 {
		photos(b, "Dune.jpg") // skips, or fails under FASTER_REQUIRE_DATA=1
	}
	sets = map[string][][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		sets["photo"] = append(sets["photo"], data)
		small, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: 4})
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := imgcodec.EncodeJPEG(&buf, small, 90); err != nil {
			b.Fatal(err)
		}
		small.Release()
		sets["imagenet"] = append(sets["imagenet"], buf.Bytes())
	}
	return []string{"imagenet", "photo"}, sets
}

func avgBytes(files [][]byte) int64 {
	var n int
	for _, f := range files {
		n += len(f)
	}
	return int64(n / len(files))
}

// BenchmarkDecode measures decode throughput in images/s, one goroutine,
// for this module's decoder and, in the same run on the same files,
// libjpeg-turbo's own TurboJPEG API (tjDecompress2) as the peer; run with
// -cpu 1 for one core. Sub-benchmarks: set/scale/decoder.
func BenchmarkDecode(b *testing.B) {
	names, sets := benchSets(b)
	peer, perr := newPeer()
	for _, set := range names {
		files := sets[set]
		for _, s := range []int{1, 2, 4, 8} {
			run := func(name string, decode func(data []byte) error) {
				b.Run(fmt.Sprintf("%s/scale1_%d/%s", set, s, name), func(b *testing.B) {
					b.SetBytes(avgBytes(files))
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						if err := decode(files[i%len(files)]); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
				})
			}
			opts := &imgcodec.DecodeOptions{ScaleDenom: s}
			run("faster-"+imgcodec.Backend, func(data []byte) error {
				img, err := imgcodec.Decode(data, opts)
				if err == nil {
					img.Release()
				}
				return err
			})
			if perr == nil {
				run("turbojpeg-peer", func(data []byte) error { return peer(data, s) })
			} else if s == 1 {
				b.Logf("no peer: %v", perr)
			}
			if s == 1 && imgcodec.Backend != "pure-go" {
				run("pure-go", func(data []byte) error { _, err := pureGo(data, opts); return err })
			}
		}
	}
}

// BenchmarkDecodeVsPeer alternates our decode and TurboJPEG's on the same
// file within each iteration and times them separately, so load on a
// shared machine hits both alike: the ours/peer ratio is the figure to
// quote.
func BenchmarkDecodeVsPeer(b *testing.B) {
	names, sets := benchSets(b)
	peer, err := newPeer()
	if err != nil {
		b.Skipf("no peer: %v", err)
	}
	for _, set := range names {
		files := sets[set]
		for _, s := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("%s/scale1_%d", set, s), func(b *testing.B) {
				opts := &imgcodec.DecodeOptions{ScaleDenom: s}
				var ours, theirs time.Duration
				for i := 0; b.Loop(); i++ {
					data := files[i%len(files)]
					t0 := time.Now()
					img, err := imgcodec.Decode(data, opts)
					if err != nil {
						b.Fatal(err)
					}
					img.Release()
					t1 := time.Now()
					if err := peer(data, s); err != nil {
						b.Fatal(err)
					}
					ours += t1.Sub(t0)
					theirs += time.Since(t1)
				}
				b.ReportMetric(float64(b.N)/ours.Seconds(), "images/s")
				b.ReportMetric(float64(b.N)/theirs.Seconds(), "peer-images/s")
				b.ReportMetric(theirs.Seconds()/ours.Seconds(), "ours/peer")
			})
		}
	}
}

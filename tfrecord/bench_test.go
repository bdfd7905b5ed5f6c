package tfrecord

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Record sizes of the two kinds of shards we pack: Fashion-MNIST PNGs
// (~400 B examples) and ImageNet-sized JPEGs (~110 kB).
var benchSizes = []struct {
	name string
	size int
}{{"400B", 400}, {"110kB", 110_000}}

func benchRecords(size, total int) [][]byte {
	n := max(total/size, 1)
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = bytes.Repeat([]byte{byte(i)}, size)
	}
	return recs
}

func BenchmarkWrite(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			recs := benchRecords(s.size, 32<<20)
			w := NewWriter(io.Discard)
			b.SetBytes(int64(s.size + FrameSize))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := w.Write(recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
			w.Flush()
		})
	}
}

// BenchmarkRead reads a 64 MiB shard from a file (page cache) with CRC
// checks; the "cat" sub-benchmark times `cat FILE > /dev/null` on the same
// file in the same run, as the baseline.
func BenchmarkRead(b *testing.B) {
	for _, s := range benchSizes {
		path := filepath.Join(b.TempDir(), "shard.tfrecord")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := NewWriter(f)
		for _, r := range benchRecords(s.size, 64<<20) {
			w.Write(r)
		}
		w.Close()
		f.Close()
		st, _ := os.Stat(path)
		b.Run(s.name+"/ours", func(b *testing.B) {
			b.SetBytes(st.Size())
			b.ReportAllocs()
			var buf []byte
			for range b.N {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				r := NewReader(f)
				for {
					rec, err := r.ReadRecord(buf[:0])
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					buf = rec
				}
				f.Close()
			}
		})
		b.Run(s.name+"/cat", func(b *testing.B) {
			if _, err := exec.LookPath("cat"); err != nil {
				b.Skip("no cat")
			}
			b.SetBytes(st.Size())
			for range b.N {
				cmd := exec.Command("cat", path)
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

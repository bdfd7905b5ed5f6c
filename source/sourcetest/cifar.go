package sourcetest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Py2Pickle writes a dict as Python 2's cPickle writes CIFAR's published
// batches (protocol 2: SHORT_BINSTRING keys, BINSTRING pixel bytes,
// APPENDS in batches of 1000, BINPUT after each object): values are
// string, []string, []int or a [2]any{shape []int, data []byte} array.
func Py2Pickle(keys []string, vals map[string]any) []byte {
	b := []byte{0x80, 2, '}'}
	memo := 0
	put := func() { b = append(b, 'q', byte(memo)); memo = (memo + 1) % 256 }
	str := func(s string) {
		if len(s) < 256 {
			b = append(b, 'U', byte(len(s)))
		} else {
			b = append(b, 'T')
			b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		}
		b = append(b, s...)
		put()
	}
	integer := func(v int) {
		switch {
		case v >= 0 && v < 256:
			b = append(b, 'K', byte(v))
		case v >= 0 && v < 65536:
			b = append(b, 'M', byte(v), byte(v>>8))
		default:
			b = append(b, 'J')
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
		}
	}
	put()
	b = append(b, '(')
	for _, k := range keys {
		str(k)
		switch v := vals[k].(type) {
		case string:
			str(v)
		case []int, []string:
			b = append(b, ']')
			put()
			n := 0
			if ints, ok := v.([]int); ok {
				n = len(ints)
			} else {
				n = len(v.([]string))
			}
			for i := 0; i < n; i++ {
				if i%1000 == 0 {
					b = append(b, '(')
				}
				if ints, ok := v.([]int); ok {
					integer(ints[i])
				} else {
					str(v.([]string)[i])
				}
				if i%1000 == 999 || i == n-1 {
					b = append(b, 'e')
				}
			}
		case [2]any:
			shape, data := v[0].([]int), v[1].([]byte)
			b = append(b, "cnumpy.core.multiarray\n_reconstruct\n"...)
			put()
			b = append(b, "cnumpy\nndarray\n"...)
			put()
			b = append(b, 'K', 0, 0x85)
			put()
			str("b")
			b = append(b, 0x87)
			put()
			b = append(b, 'R')
			put()
			b = append(b, '(', 'K', 1)
			for _, d := range shape {
				integer(d)
			}
			b = append(b, 0x86)
			put()
			b = append(b, "cnumpy\ndtype\n"...)
			put()
			str("u1")
			b = append(b, 'K', 0, 'K', 1, 0x87, 'R')
			put()
			b = append(b, '(', 'K', 3)
			str("|")
			b = append(b, 'N', 'N', 'N', 'J', 0xff, 0xff, 0xff, 0xff, 'J', 0xff, 0xff, 0xff, 0xff, 'K', 0, 't', 'b', 0x89)
			str(string(data))
			b = append(b, 't', 'b')
		}
	}
	return append(b, 'u', '.')
}

// WriteCIFAR10 writes CIFAR-10's batches under root as the published
// files are (Py2Pickle), n images a batch, and returns the batches'
// folder. Batch f (0-based, test_batch last) holds n+311·f images, image
// i labelled (7i+f) mod 10.
func WriteCIFAR10(t testing.TB, root string, n int) string {
	t.Helper()
	dir := filepath.Join(root, "cifar-10-batches-py")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, keys []string, vals map[string]any) {
		if err := os.WriteFile(filepath.Join(dir, name), Py2Pickle(keys, vals), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}
	write("batches.meta", []string{"num_cases_per_batch", "label_names", "num_vis"}, map[string]any{"num_cases_per_batch": []int{n}, "label_names": names, "num_vis": []int{3072}})
	seed := uint32(1)
	for f, name := range []string{"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch"} {
		k := n + f*311 // one batch over 1000 images: APPENDS in batches
		labels, files := make([]int, k), make([]string, k)
		data := make([]byte, k*3072)
		for i := range data {
			seed = seed*1664525 + 1013904223
			data[i] = byte(seed >> 24)
		}
		for i := range labels {
			labels[i] = (i*7 + f) % 10
			files[i] = fmt.Sprintf("img_%d_%d.png", f, i)
		}
		write(name, []string{"batch_label", "labels", "data", "filenames"}, map[string]any{"batch_label": "batch " + name, "labels": labels, "data": [2]any{[]int{k, 3072}, data}, "filenames": files})
	}
	return dir
}

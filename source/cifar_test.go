package source

import (
	"bytes"
	"encoding/csv"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/faster-training/faster/source/sourcetest"
)

// py3Batch is a CIFAR-shaped dict as Python 3's pickle.dumps(protocol=2)
// writes it: bytes as _codecs.encode(str, "latin1"), BINGET.
const py3Batch = "\x80\x02}q\x00(X\x0b\x00\x00\x00batch_labelq\x01X\x01\x00\x00\x00bq\x02X\x06\x00\x00\x00labelsq\x03]q\x04(K\x06K\x01M,\x01eX\x04\x00\x00\x00dataq\x05cnumpy.core.multiarray\n_reconstruct\nq\x06cnumpy\nndarray\nq\x07K\x00\x85q\x08c_codecs\nencode\nq\tX\x01\x00\x00\x00bq\nX\x06\x00\x00\x00latin1q\x0b\x86q\x0cRq\r\x87q\x0eRq\x0f(K\x01K\x03K\x04\x86q\x10cnumpy\ndtype\nq\x11X\x02\x00\x00\x00u1q\x12\x89\x88\x87q\x13Rq\x14(K\x03X\x01\x00\x00\x00|q\x15NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tq\x16b\x89h\tX\x11\x00\x00\x00\x00\x14(<Pdx\xc2\x8c\xc2\xa0\xc2\xb4\xc3\x88\xc3\x9cq\x17h\x0b\x86q\x18Rq\x19tq\x1abX\t\x00\x00\x00filenamesq\x1b]q\x1cX\x05\x00\x00\x00a.pngq\x1dau."

// py3Meta is {"label_names": ["cat", "dog"]} as pickle.dumps(protocol=4)
// writes it: FRAME, SHORT_BINUNICODE, MEMOIZE.
const py3Meta = "\x80\x04\x95\"\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x0blabel_names\x94]\x94(\x8c\x03cat\x94\x8c\x03dog\x94es."

func TestReadPickleForms(t *testing.T) {
	v, err := readPickle([]byte(py3Batch), "py3")
	if err != nil {
		t.Fatal(err)
	}
	f := pickleFile{v.(*pyDict), "py3"}
	labels, err := f.ints("labels")
	if err != nil || !slices.Equal(labels, []int{6, 1, 300}) {
		t.Fatalf("labels %v, %v", labels, err)
	}
	a := f.m["data"].(*pyArray)
	want := []byte{0, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200, 220}
	if !slices.Equal(a.shape, []int{3, 4}) || !bytes.Equal(a.data, want) {
		t.Fatalf("array %v %v, want [3 4] %v", a.shape, a.data, want)
	}
	v, err = readPickle([]byte(py3Meta), "py3meta")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pickleFile{v.(*pyDict), "m"}.texts("label_names")
	if err != nil || !slices.Equal(names, []string{"cat", "dog"}) {
		t.Fatalf("names %v, %v", names, err)
	}
	// Code is never run: a global other than numpy's array and dtype
	// and _codecs.encode is refused, naming it.
	evil := "\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R."
	if _, err := readPickle([]byte(evil), "evil"); err == nil || !strings.Contains(err.Error(), "os.system") {
		t.Fatalf("os.system: %v", err)
	}
}

// FuzzCIFARPickle: the pickle subset reader never panics, never holds
// more than its input, and what it reads round-trips: a batch written as
// Python 2's cPickle writes one (sourcetest.Py2Pickle) reads back as
// written.
func FuzzCIFARPickle(f *testing.F) {
	f.Add([]byte(py3Batch), uint8(0))
	f.Add([]byte(py3Meta), uint8(0))
	f.Add(sourcetest.Py2Pickle([]string{"labels", "data"}, map[string]any{"labels": []int{1, 2, 70000}, "data": [2]any{[]int{3, 2}, []byte("abcdef")}}), uint8(3))
	f.Add([]byte("\x80\x02}q\x00(U\x04dataq\x01]q\x02u."), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		v, err := readPickle(data, "fuzz")
		if err == nil {
			if a, ok := v.(*pyArray); ok && a.built {
				size := 1
				for _, d := range a.shape {
					size *= d
				}
				if size != len(a.data) {
					t.Fatalf("shape %v, %d bytes", a.shape, len(a.data))
				}
			}
		}
		// Round trip: labels and pixels from the input's bytes.
		k := int(n)%5 + 1
		px := bytes.Repeat(append(data, 1), k*7)[:k*7]
		labels := make([]int, k)
		for i := range labels {
			labels[i] = int(px[i]) * 1000 * i
		}
		names := []string{string(data[:min(len(data), 300)]), "x"}
		b := sourcetest.Py2Pickle([]string{"labels", "data", "names"}, map[string]any{"labels": labels, "data": [2]any{[]int{k, 7}, px}, "names": names})
		v, err = readPickle(b, "roundtrip")
		if err != nil {
			t.Fatal(err)
		}
		pf := pickleFile{v.(*pyDict), "rt"}
		got, err := pf.ints("labels")
		if err != nil || !slices.Equal(got, labels) {
			t.Fatalf("labels %v, %v; want %v", got, err, labels)
		}
		a := pf.m["data"].(*pyArray)
		if !bytes.Equal(a.data, px) || !slices.Equal(a.shape, []int{k, 7}) {
			t.Fatal("pixels differ")
		}
		txt, err := pf.texts("names")
		if err != nil || txt[0] != latin1(names[0]) {
			t.Fatalf("names: %v", err)
		}
	})
}

// FuzzLOCSolution: Kaggle's CSV reader never panics, every synset it
// returns is one word, and a map written back as a CSV reads back equal.
func FuzzLOCSolution(f *testing.F) {
	f.Add([]byte("ImageId,PredictionString\nILSVRC2012_val_00008726,n02119789 255 142 454 329 n02119789 44 21 322 295 \nILSVRC2012_val_00000001,n01751748 1 2 3 4\n"))
	f.Add([]byte("\ufeffImageId,PredictionString\r\na,\"n1 2\"\r\n"))
	f.Add([]byte("ImageId,PredictionString\na,n1\na,n2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadLOCSolution(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error not naming the file: %v", err)
			}
			return
		}
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		w.Write([]string{"ImageId", "PredictionString"})
		for _, id := range slices.Sorted(maps.Keys(m)) {
			s := m[id]
			if s == "" || strings.ContainsFunc(s, unicode.IsSpace) {
				t.Fatalf("synset %q of %q", s, id)
			}
			w.Write([]string{id, s + " 1 2 3 4"})
		}
		w.Flush()
		m2, err := ReadLOCSolution(&b, "again.csv")
		if err != nil {
			t.Fatalf("rewritten: %v", err)
		}
		if !maps.Equal(m, m2) {
			t.Fatalf("round trip: %q, %q", m, m2)
		}
	})
}

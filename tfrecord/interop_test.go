package tfrecord_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"
)

// The interop tests run TFRecord files through @roboflow/tfrecords, a pure
// JavaScript implementation independent of ours, installed by
// scripts/setup.sh into testdata/interop/node_modules.
func nodeInterop(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("testdata/interop")
	_, errNode := exec.LookPath("node")
	_, errMod := os.Stat(filepath.Join(dir, "node_modules/@roboflow/tfrecords"))
	if errNode != nil || errMod != nil {
		testenv.MissingInterop(t, "node or @roboflow/tfrecords missing")
	}
	return dir
}

// payload reproduces write.js's deterministic image/encoded bytes.
func payload(i int) []byte {
	size := (i * 7919) % 70000
	b := make([]byte, size)
	for j := range b {
		b[j] = byte((i*31 + j*17) & 0xff)
	}
	return b
}

func TestInteropReadNodeWritten(t *testing.T) {
	dir := nodeInterop(t)
	path := filepath.Join(t.TempDir(), "node.tfrecord")
	const n = 40
	if out, err := exec.Command("node", filepath.Join(dir, "write.js"), path, fmt.Sprint(n)).CombinedOutput(); err != nil {
		t.Fatalf("write.js: %v\n%s", err, out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := tfrecord.NewReader(f, tfrecord.WithName(path))
	i := 0
	for ; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ex, err := tfexample.Unmarshal(rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		enc, _ := ex.Bytes("image/encoded")
		if !bytes.Equal(enc, payload(i)) && !(len(enc) == 0 && len(payload(i)) == 0) {
			t.Fatalf("record %d: image/encoded differs (%d vs %d bytes)", i, len(enc), len(payload(i)))
		}
		if label, _ := ex.Int64("image/class/label"); label != int64(i%10) {
			t.Fatalf("record %d: label %d", i, label)
		}
		if name, _ := ex.Bytes("image/filename"); string(name) != fmt.Sprintf("img_%d.jpg", i) {
			t.Fatalf("record %d: filename %q", i, name)
		}
		xmin := ex.Features["image/object/bbox/xmin"]
		if xmin.Kind != tfexample.KindFloat || len(xmin.Float) != 2 || xmin.Float[0] != 0.25 || xmin.Float[1] != float32(i)/4 {
			t.Fatalf("record %d: float list %+v", i, xmin)
		}
	}
	if i != n {
		t.Fatalf("read %d records, want %d", i, n)
	}
}

func TestInteropNodeReadsOurs(t *testing.T) {
	dir := nodeInterop(t)
	path := filepath.Join(t.TempDir(), "ours.tfrecord")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := tfrecord.NewWriter(f)
	type rec struct {
		Label    int64  `json:"label"`
		Filename string `json:"filename"`
		SHA256   string `json:"sha256"`
	}
	var want []rec
	for i := range 60 {
		enc := payload(i * 3)
		ex := tfexample.New().
			SetBytes("image/encoded", enc).
			SetInt64("image/class/label", int64(i*7%13)).
			SetString("image/filename", fmt.Sprintf("dir/%03d.png", i)).
			SetFloat("score", float32(i)/3)
		if err := w.Write(ex.Marshal(nil)); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(enc)
		want = append(want, rec{int64(i * 7 % 13), fmt.Sprintf("dir/%03d.png", i), hex.EncodeToString(sum[:])})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("node", filepath.Join(dir, "read.js"), path).Output()
	if err != nil {
		t.Fatalf("read.js: %v", err)
	}
	var got struct {
		Count      int      `json:"count"`
		Complaints []string `json:"complaints"`
		Records    []rec    `json:"records"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("read.js output %q: %v", out, err)
	}
	if len(got.Complaints) > 0 || got.Count != len(want) {
		t.Fatalf("node read %d of %d records, complaints %v", got.Count, len(want), got.Complaints)
	}
	for i := range want {
		if got.Records[i] != want[i] {
			t.Fatalf("record %d: node read %+v, want %+v", i, got.Records[i], want[i])
		}
	}
}

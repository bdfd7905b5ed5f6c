package train

import (
	"math"
	"testing"
)

// A NaN logit is never a correct prediction: not when it is the label's
// (NaN > x is false, so a plain comparison would rank it first), and a NaN
// elsewhere ranks above the label as torch.topk orders NaN.
func TestCrossEntropyNaNIsWrong(t *testing.T) {
	b := NewReference(BackendOptions{})
	defer b.Close()
	nan := float32(math.NaN())
	rows := [][]float32{
		{nan, 1, 0, 0, 0, 0, 0}, // label 0 is NaN: wrong in top-1 and top-5
		{1, nan, 0, 0, 0, 0, 0}, // label 0 is the largest number but a NaN ranks above it: top-5 only
		{nan, nan, nan, nan, nan, nan, nan},
		{3, 1, 0, 0, 0, 0, 0}, // plainly right
	}
	labels := []int{0, 0, 3, 0}
	x, err := b.NewTensor(len(rows), len(rows[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	var flat []float32
	for _, r := range rows {
		flat = append(flat, r...)
	}
	if err := x.Write(flat); err != nil {
		t.Fatal(err)
	}
	ce := NewCrossEntropy(b)
	defer ce.Close()
	r, _, err := ce.Forward(x, labels, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Correct1 != 1 || r.Correct5 != 2 {
		t.Errorf("top-1 %d, top-5 %d of 4 rows with NaN logits: want 1 and 2", r.Correct1, r.Correct5)
	}
	if !math.IsNaN(r.Loss) {
		t.Errorf("loss %g over NaN logits: want NaN", r.Loss)
	}
}

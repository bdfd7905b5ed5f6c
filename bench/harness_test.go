package bench

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestRoundsAlternate(t *testing.T) {
	var got [][2]int
	err := Rounds(3, 3, func(r, i int) error {
		got = append(got, [2]int{r, i})
		return nil
	})
	want := [][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 2}, {1, 1}, {1, 0}, {2, 0}, {2, 1}, {2, 2}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Rounds(3, 3): %v %v, want %v", got, err, want)
	}
	stop := errors.New("stop")
	calls := 0
	if err := Rounds(2, 2, func(r, i int) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("an error: %v after %d calls, want it after 1", err, calls)
	}
}

// A child's summary is read from its stdout; its failure carries its
// stderr.
func TestRunSummary(t *testing.T) {
	ctx := context.Background()
	s, err := RunSummary(ctx, "/bin/sh", []string{"-c", `echo '{"model":"thinnet","test_accuracy":0.5,"curve":[{"step":3,"test_accuracy":0.25}]}'`}, os.Environ())
	if err != nil || s.Model != "thinnet" || s.TestAccuracy != 0.5 || len(s.Curve) != 1 || s.Curve[0].Step != 3 {
		t.Fatalf("RunSummary: %+v, %v", s, err)
	}
	_, err = RunSummary(ctx, "/bin/sh", []string{"-c", "echo 'no such data' >&2; exit 3"}, nil)
	if err == nil || !strings.Contains(err.Error(), "no such data") {
		t.Errorf("a failing child: %v, want its stderr", err)
	}
	if _, err := RunSummary(ctx, "/bin/sh", []string{"-c", "echo not-json"}, nil); err == nil {
		t.Error("a child printing no JSON: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := RunSummary(cctx, "/bin/sh", []string{"-c", "sleep 5"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

func TestMedianAndPairedRatio(t *testing.T) {
	if i, lo, hi := Median([]float64{3, 1, 4, 2}); i != 3 || lo != 1 || hi != 4 {
		t.Errorf("Median(3 1 4 2) = %d %g %g, want index 3 (2: the lower middle), 1, 4", i, lo, hi)
	}
	if i, _, _ := Median(nil); i != -1 {
		t.Errorf("Median(nil) = %d, want -1", i)
	}
	// Rounds pair up: 10/5, 12/4 and 9/9; a zero time is left out.
	mid, lo, hi, ok := PairedRatio([]float64{10, 12, 9, 7}, []float64{5, 4, 9, 0})
	if !ok || mid != 2 || lo != 1 || hi != 3 {
		t.Errorf("PairedRatio = %g [%g, %g] %v, want 2 [1, 3]", mid, lo, hi, ok)
	}
	if got := RatioText(mid, lo, hi, true); got != "≈2.00× [1.00–3.00]" {
		t.Errorf("RatioText = %q: a spread holding 1.0 is marked ≈", got)
	}
}

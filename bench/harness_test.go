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

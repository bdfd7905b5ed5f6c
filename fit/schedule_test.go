package fit

import (
	"slices"
	"testing"
)

func TestProgressiveSchedule(t *testing.T) {
	for _, c := range []struct {
		full, epochs int
		want         []int
	}{{28, 1, []int{28}}, {28, 2, []int{20, 28}}, {28, 3, []int{20, 24, 28}}, {28, 4, []int{20, 22, 26, 28}}, {224, 3, []int{156, 190, 224}}} {
		if got := ProgressiveSchedule(c.full, c.epochs); !slices.Equal(got, c.want) {
			t.Errorf("ProgressiveSchedule(%d, %d) = %v, want %v", c.full, c.epochs, got, c.want)
		}
	}
}

package bench

import (
	"strings"
	"testing"
)

// The table's figures from given runs (no timing): the median run, its
// spread, the speed-up as the median of same-round ratios, and ≈ where the
// spread of a ratio holds 1.
func TestMedianCell(t *testing.T) {
	cells := func(secs ...float64) []TrainCell {
		var cs []TrainCell
		for i, s := range secs {
			cs = append(cs, TrainCell{Seconds: s, TestAccuracy: float64(i) / 10})
		}
		return cs
	}
	base := cells(10, 12, 11)
	b := MedianCell(base, base)
	if b.Seconds != 11 || b.TestAccuracy != 0.2 || b.Low != 10 || b.High != 12 || b.Speedup != 0 {
		t.Fatalf("baseline: %+v", b)
	}
	// Ratios per round: 10/5, 12/8, 11/4 = 2, 1.5, 2.75: median 2.
	c := MedianCell(cells(5, 8, 4), base)
	if c.Seconds != 5 || c.Speedup != 2 || c.SpeedupLow != 1.5 || c.SpeedupHigh != 2.75 {
		t.Fatalf("cell: %+v", c)
	}
	if got := CellText(&c, &b); got != "5.0 s [4.0–8.0] · 0.0% · 2.00× [1.50–2.75]" {
		t.Fatalf("cell text %q", got)
	}
	// Ratios 10/9, 12/13, 11/11: their spread holds 1.
	d := MedianCell(cells(9, 13, 11), base)
	if got := CellText(&d, &b); !strings.Contains(got, "≈1.00× [0.92–1.11]") {
		t.Fatalf("a tie: %q", got)
	}
	// An even count takes the lower middle.
	if e := MedianCell(cells(3, 1, 4, 2), nil); e.Seconds != 2 || len(e.Runs) != 4 {
		t.Fatalf("even count: %+v", e)
	}
	if got := RatioText(1.3, 0, 0, false); got != "1.30×" {
		t.Fatalf("one run: %q", got)
	}
}

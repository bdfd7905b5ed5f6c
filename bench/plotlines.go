package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"github.com/faster-training/faster/internal/atomicfile"
)

// Series is one line of a line chart: points (X[i], Y[i]) in order.
type Series struct {
	Label string
	X, Y  []float64
}

// PlotLines writes a PNG line chart of series to path (atomically), with
// a dashed horizontal line at hline when it is not NaN (a target).
func PlotLines(path, title, xUnit, yUnit string, series []Series, hline float64) error {
	const left, right, top, bottom, w, h = 70, 20, 50, 50, 720, 360
	img := image.NewRGBA(image.Rect(0, 0, left+w+right, top+h+bottom))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	x0, x1, y0, y1 := 0.0, 0.0, math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := range s.X {
			x1 = max(x1, s.X[i])
			y0, y1 = min(y0, s.Y[i]), max(y1, s.Y[i])
		}
	}
	if !math.IsNaN(hline) {
		y0, y1 = min(y0, hline), max(y1, hline)
	}
	if math.IsInf(y0, 0) || y1 <= y0 {
		y0, y1 = 0, 1
	}
	if x1 <= x0 {
		x1 = 1
	}
	pad := (y1 - y0) * 0.05
	y0, y1 = y0-pad, y1+pad
	px := func(x float64) int { return left + int((x-x0)/(x1-x0)*w) }
	py := func(y float64) int { return top + h - int((y-y0)/(y1-y0)*h) }
	text(img, 10, 20, title, color.Black)
	axis := color.RGBA{120, 120, 120, 255}
	draw.Draw(img, image.Rect(left-2, top, left, top+h), &image.Uniform{axis}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(left-2, top+h, left+w, top+h+2), &image.Uniform{axis}, image.Point{}, draw.Src)
	for k := 0; k <= 4; k++ {
		xv, yv := x0+(x1-x0)*float64(k)/4, y0+(y1-y0)*float64(k)/4
		text(img, px(xv)-10, top+h+16, fmt.Sprintf("%.0f", xv), color.Black)
		text(img, 5, py(yv)+4, fmt.Sprintf("%.3g", yv), color.Black)
	}
	text(img, left+w/2-40, top+h+36, xUnit, color.Black)
	text(img, 5, top-8, yUnit, color.Black)
	if !math.IsNaN(hline) {
		y := py(hline)
		for x := left; x < left+w; x += 8 {
			draw.Draw(img, image.Rect(x, y, x+4, y+1), &image.Uniform{axis}, image.Point{}, draw.Src)
		}
	}
	palette := []color.RGBA{{52, 101, 164, 255}, {204, 0, 0, 255}, {78, 154, 6, 255}, {245, 121, 0, 255}, {117, 80, 123, 255}}
	for si, s := range series {
		c := &image.Uniform{palette[si%len(palette)]}
		for i := range s.X {
			x, y := px(s.X[i]), py(s.Y[i])
			draw.Draw(img, image.Rect(x-2, y-2, x+3, y+3), c, image.Point{}, draw.Src)
			if i > 0 {
				line(img, px(s.X[i-1]), py(s.Y[i-1]), x, y, c)
			}
		}
		lx, ly := left+w-220, top+20+si*16
		draw.Draw(img, image.Rect(lx, ly-5, lx+16, ly-2), c, image.Point{}, draw.Src)
		text(img, lx+22, ly, clip(s.Label, 28), color.Black)
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := png.Encode(f, img); err != nil {
		return err
	}
	return f.Commit()
}

// line draws a 2-pixel line from (xa, ya) to (xb, yb).
func line(img draw.Image, xa, ya, xb, yb int, c image.Image) {
	n := max(abs(xb-xa), abs(yb-ya), 1)
	for i := 0; i <= n; i++ {
		x := xa + (xb-xa)*i/n
		y := ya + (yb-ya)*i/n
		draw.Draw(img, image.Rect(x, y, x+2, y+2), c, image.Point{}, draw.Src)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

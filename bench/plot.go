package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/faster-training/faster/internal/atomicfile"
)

// Bar is one bar of a chart.
type Bar struct {
	Label string  // under the bar
	Value float64 // bar height
	Note  string  // above the bar (e.g. the bottleneck); may be empty
}

// PlotBars writes a PNG bar chart of bars to path (atomically).
func PlotBars(path, title, unit string, bars []Bar) error {
	const (
		barW, gap, left, top, bottom, height = 110, 30, 60, 50, 50, 300
	)
	w := left + len(bars)*(barW+gap) + gap
	h := top + height + bottom
	img := image.NewRGBA(image.Rect(0, 0, max(w, 420), h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	maxV := 0.0
	for _, b := range bars {
		maxV = max(maxV, b.Value)
	}
	if maxV <= 0 {
		maxV = 1
	}
	text(img, 10, 20, title+" ("+unit+")", color.Black)
	axis := color.RGBA{120, 120, 120, 255}
	draw.Draw(img, image.Rect(left-2, top, left, top+height), &image.Uniform{axis}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(left-2, top+height, img.Bounds().Dx()-10, top+height+2), &image.Uniform{axis}, image.Point{}, draw.Src)
	palette := []color.RGBA{{52, 101, 164, 255}, {204, 0, 0, 255}, {78, 154, 6, 255}, {245, 121, 0, 255}, {117, 80, 123, 255}}
	for i, b := range bars {
		x0 := left + gap + i*(barW+gap)
		bh := int(b.Value / maxV * float64(height-20))
		draw.Draw(img, image.Rect(x0, top+height-bh, x0+barW, top+height), &image.Uniform{palette[i%len(palette)]}, image.Point{}, draw.Src)
		text(img, x0, top+height-bh-18, fmt.Sprintf("%.0f", b.Value), color.Black)
		if b.Note != "" {
			text(img, x0, top+height-bh-5, b.Note, axis)
		}
		text(img, x0, top+height+16, clip(b.Label, barW/7), color.Black)
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

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:max(n-2, 0)] + ".."
}

func text(img draw.Image, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

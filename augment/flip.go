package augment

import "github.com/faster-training/faster/imgcodec"

// FlipHorizontal mirrors m left to right in place. Inside a resize, use
// ResizeBox's flip instead: it costs nothing there.
func FlipHorizontal(m *imgcodec.Image) {
	w := m.Width
	for y := 0; y < m.Height; y++ {
		if m.Channels == 3 {
			row := m.Pix[y*m.Stride : y*m.Stride+w*3]
			for i, j := 0, (w-1)*3; i < j; i, j = i+3, j-3 {
				a := row[i : i+3 : i+3]
				b := row[j : j+3 : j+3]
				a[0], b[0] = b[0], a[0]
				a[1], b[1] = b[1], a[1]
				a[2], b[2] = b[2], a[2]
			}
			continue
		}
		row := m.Pix[y*m.Stride : y*m.Stride+w*m.Channels]
		for i, j := 0, len(row)-1; i < j; i, j = i+1, j-1 {
			row[i], row[j] = row[j], row[i]
		}
	}
}

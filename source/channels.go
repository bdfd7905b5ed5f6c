package source

// Channeler is implemented by datasets whose images all have the same
// number of channels, known before any is decoded: MNIST and
// Fashion-MNIST's IDX images are one channel (torchvision serves them as
// 1×H×W). A loader serves such data with that many channels unless its
// transform says otherwise (Grayscale(3)); a dataset that does not
// implement it is served as RGB.
type Channeler interface {
	// Channels returns the images' channel count: 1 or 3.
	Channels() int
}

var _ Channeler = (*IDX)(nil)

// Channels returns 1: IDX images are grayscale.
func (d *IDX) Channels() int { return 1 }

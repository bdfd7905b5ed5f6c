package source

// Sizer is implemented by datasets whose images all have one size, known
// before any is decoded: CIFAR's 32×32, an IDX file's rows × columns. A
// loader serves a transform that keeps each picture's size (ToTensor +
// Normalize alone, every CIFAR and MNIST script's test transform) at
// that size; for other data it takes the first sample's.
type Sizer interface {
	// Size returns the images' height and width.
	Size() (h, w int)
}

var (
	_ Sizer = (*IDX)(nil)
	_ Sizer = (*CIFAR)(nil)
)

// Size returns 32, 32: CIFAR-10's and CIFAR-100's images are 32×32 (3,072
// bytes a row of the batches' data).
func (c *CIFAR) Size() (h, w int) { return 32, 32 }

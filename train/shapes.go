package train

import "errors"

// Shapes returns a backend that builds a model's layers with their shapes
// and nothing else: no parameter holds values (Param.Value and Grad are
// nil, Param.Shape is set) and no op runs (each fails with
// ErrShapesOnly). EstimateMemory of a model built on it is that of the
// same model on a real backend, so a caller can refuse a model too large
// for the machine before allocating any of it (`faster train --filters
// 20000`).
func Shapes() Backend { return shapes{} }

// ErrShapesOnly is the error of an op of the Shapes backend.
var ErrShapesOnly = errors.New("the shapes backend holds no values and runs no op")

// allocates reports whether layers built on b hold values (every backend
// but Shapes).
func allocates(b Backend) bool {
	_, ok := b.(shapes)
	return !ok
}

type shapes struct{}

func (shapes) Name() string                                    { return "shapes" }
func (shapes) Threads() int                                    { return 1 }
func (shapes) NewTensor(...int) (Tensor, error)                { return nil, ErrShapesOnly }
func (shapes) NewConv(ConvSpec) (ConvOp, error)                { return shapeConv{}, nil }
func (shapes) NewBatchNorm(BatchNormSpec) (BatchNormOp, error) { return shapeBN{}, nil }
func (shapes) NewReLU() (ReLUOp, error)                        { return shapeReLU{}, nil }
func (shapes) NewPool(PoolSpec) (PoolOp, error)                { return shapePool{}, nil }
func (shapes) NewLinear(LinearSpec) (LinearOp, error)          { return shapeLinear{}, nil }
func (shapes) NewAdd() (AddOp, error)                          { return shapeAdd{}, nil }
func (shapes) Close() error                                    { return nil }

type (
	shapeConv   struct{}
	shapeBN     struct{}
	shapeReLU   struct{}
	shapePool   struct{}
	shapeLinear struct{}
	shapeAdd    struct{}
)

func (shapeConv) Forward(Tensor, []float32, []float32) (Tensor, error) { return nil, ErrShapesOnly }
func (shapeConv) Backward(Tensor, []float32, []float32, []float32, bool) (Tensor, error) {
	return nil, ErrShapesOnly
}
func (shapeConv) Close() {}
func (shapeBN) Forward(Tensor, []float32, []float32, []float32, []float32, bool) (Tensor, error) {
	return nil, ErrShapesOnly
}
func (shapeBN) Backward(Tensor, []float32, []float32, []float32, []float32) (Tensor, error) {
	return nil, ErrShapesOnly
}
func (shapeBN) Close()                                 {}
func (shapeReLU) Forward(Tensor) (Tensor, error)       { return nil, ErrShapesOnly }
func (shapeReLU) Backward(Tensor) (Tensor, error)      { return nil, ErrShapesOnly }
func (shapeReLU) Close()                               {}
func (shapePool) Forward(Tensor, bool) (Tensor, error) { return nil, ErrShapesOnly }
func (shapePool) Backward(Tensor) (Tensor, error)      { return nil, ErrShapesOnly }
func (shapePool) Close()                               {}
func (shapeLinear) Forward(Tensor, []float32, []float32) (Tensor, error) {
	return nil, ErrShapesOnly
}
func (shapeLinear) Backward(Tensor, []float32, []float32, []float32, bool) (Tensor, error) {
	return nil, ErrShapesOnly
}
func (shapeLinear) Close()                              {}
func (shapeAdd) Forward(Tensor, Tensor) (Tensor, error) { return nil, ErrShapesOnly }
func (shapeAdd) Close()                                 {}

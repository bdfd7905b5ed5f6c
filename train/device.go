package train

import (
	"errors"
	"fmt"
)

// Device-resident training: optional interfaces a Backend may implement,
// each found by a type assertion, the way database/sql/driver grows
// (QueryerContext beside Queryer). A backend that implements none of them
// trains exactly as before: parameters, gradients, momentum, BatchNorm's
// running statistics, the loss, SGD, the GradScaler's and the anomaly
// check's reductions and the EMA all run on host []float32 slices. The
// trainer is written once, against State and LossOp; hostState and
// hostLoss adapt the host path to them.
//
//	Backend ── ParamStore ──► State       (parameters, gradients, buffers,
//	   │                                   momentum, EMA; fused SGD,
//	   │                                   unscale + finite check, EMA)
//	   ├────── LossBackend ─► LossOp      (loss, top-1, top-5 sums kept on
//	   │                                   the device, read per interval)
//	   ├────── ByteInputBackend ► ByteInputOp  (uint8 HWC → normalised NCHW)
//	   ├────── Syncer, DeviceMemory, DeviceNamer
//	   └─ ops: DeviceConvOp, DeviceLinearOp, DeviceBatchNormOp
//	           (weights as tensors; BatchNorm updates its running
//	           statistics itself)
//
// While a State is bound (during a TrainEpoch or TrainStream call), each
// Param's Value (and a buffer's) is a host mirror: State.Pull refreshes
// it (the trainer pulls before a checkpoint and when the call returns,
// releasing the state) and State.Push writes it back to the device. Layers hand their ops the Param's tensors (Param.Tensors) in
// place of the slices.

// Syncer is implemented by backends that queue work asynchronously: Sync
// returns once everything queued so far has finished (cudaDeviceSynchronize).
// Backends without it run synchronously.
type Syncer interface {
	Sync() error
}

// Sync waits for b's queued work when b queues any (Syncer).
func Sync(b Backend) error {
	if s, ok := b.(Syncer); ok {
		return s.Sync()
	}
	return nil
}

// DeviceNamer is implemented by backends that run on a device other than
// the host's CPU; Device is the name BackendOptions.Device selected
// ("cuda:0"). Backends without it run on "cpu".
type DeviceNamer interface {
	Device() string
}

// DeviceOf is b's device: DeviceNamer's answer, else "cpu".
func DeviceOf(b Backend) string {
	if d, ok := b.(DeviceNamer); ok {
		return d.Device()
	}
	return "cpu"
}

// DeviceMemory is implemented by backends whose tensors live in memory of
// their own: MemoryBudget is the bytes a training step may hold there
// (free device memory less the backend's reserve). The step's memory
// check (EstimateMemory's Total) is compared with it in place of the
// host's memory.
type DeviceMemory interface {
	MemoryBudget() (int64, error)
}

// MemoryBudget returns b's device memory budget and true when b has one
// (DeviceMemory); false: the step's tensors live in host memory.
func MemoryBudget(b Backend) (int64, bool, error) {
	m, ok := b.(DeviceMemory)
	if !ok {
		return 0, false, nil
	}
	n, err := m.MemoryBudget()
	return n, true, err
}

// ErrDevice reports a BackendOptions.Device a backend does not run on.
var ErrDevice = errors.New("no such device")

// CheckCPUDevice, for a backend that runs on the host's CPU only,
// accepts o.Device "" and "cpu" and refuses others with ErrDevice.
func CheckCPUDevice(name string, o BackendOptions) error {
	if o.Device == "" || o.Device == "cpu" {
		return nil
	}
	return fmt.Errorf("backend %q runs on the cpu, not %q: %w", name, o.Device, ErrDevice)
}

// ---- parameters, gradients and the optimiser's state ----

// ParamStore is implemented by backends that keep a network's state on
// their device.
type ParamStore interface {
	// NewState copies params (trainable, with gradients) and buffers
	// (BatchNorm's running statistics) onto the device, with opt's
	// momentum and e's average when they exist (e may be nil), and
	// returns the state that owns them.
	NewState(params, buffers []*Param, opt *SGD, e *EMA) (State, error)
}

// State is the training state of one network: its parameters and
// gradients, its buffers, the optimiser's momentum and the EMA's average,
// with the step's arithmetic on them. The host adapter (hostState) runs
// each method on the Params' slices with the code the trainer always ran;
// a device backend runs it where the tensors are.
type State interface {
	// Tensors returns tensor i of the state (the params, then the
	// buffers, in NewState's order): its value and gradient (nil for a
	// buffer). The host adapter returns nils: layers then pass slices.
	Tensors(i int) (value, grad Tensor)
	// Unscale multiplies every gradient by inv (float32) and reports
	// whether all of them are finite afterwards: the GradScaler's
	// unscale_ and found_inf, one reduction read back.
	Unscale(inv float32) (finite bool, err error)
	// SGDStep is one fused step of opt (momentum, weight decay, Nesterov)
	// at rate lr, with PyTorch's semantics (see SGD). The momentum lives
	// in the state; Pull copies it into opt.Velocity.
	SGDStep(opt *SGD, lr float64) error
	// NonFinite lists the indices of the params whose values (values
	// true) or gradients (false) hold a NaN or an infinity: the anomaly
	// check's reduction.
	NonFinite(values bool) ([]int, error)
	// EMAUpdate folds the params and buffers into the average with decay
	// (first: the average is a copy); EMASwap exchanges them with it.
	EMAUpdate(decay float64, first bool) error
	EMASwap() error
	// Pull copies the device's values into the Params' Value slices,
	// the momentum into opt.Velocity and the average into e.Values (each
	// allocated once it exists); Push copies them the other way (nil
	// Velocity or Values: none yet).
	Pull(opt *SGD, e *EMA) error
	Push(opt *SGD, e *EMA) error
	// Release frees the device's copies.
	Release()
}

// hostState is State on the Params' own slices: the trainer's arithmetic
// of always, run through the interface.
type hostState struct {
	params, all []*Param // all: params then buffers, EMA's order
	ema         *EMA
}

var _ State = (*hostState)(nil)

func (h *hostState) Tensors(int) (Tensor, Tensor) { return nil, nil }

func (h *hostState) Unscale(inv float32) (bool, error) { return unscale(h.params, inv), nil }

func (h *hostState) SGDStep(opt *SGD, lr float64) error {
	opt.Step(h.params, lr)
	return nil
}

func (h *hostState) NonFinite(values bool) ([]int, error) {
	var bad []int
	for i, p := range h.params {
		v := p.Grad
		if values {
			v = p.Value
		}
		if !finite32(v) {
			bad = append(bad, i)
		}
	}
	return bad, nil
}

func (h *hostState) EMAUpdate(decay float64, first bool) error {
	// The trainer's EMA keeps its own slices; the adapter is handed it.
	if h.ema == nil {
		return errors.New("train: EMA update without an EMA")
	}
	h.ema.update(h.all, decay, first)
	return nil
}

func (h *hostState) EMASwap() error {
	if h.ema != nil {
		h.ema.swap(h.all)
	}
	return nil
}

func (h *hostState) Pull(*SGD, *EMA) error { return nil }
func (h *hostState) Push(*SGD, *EMA) error { return nil }
func (h *hostState) Release()              {}

// ---- the loss ----

// LossSpec configures a LossOp: softmax cross-entropy averaged over the
// global batch.
type LossSpec struct {
	// LabelSmoothing is CrossEntropy.LabelSmoothing.
	LabelSmoothing float64
}

// LossSums are the sums a LossOp accumulates between reads: the loss
// summed over samples (each sample's loss, not the batch mean), the
// samples whose label is the top prediction and among the top five.
type LossSums struct {
	Loss       float64
	Top1, Top5 int
	Samples    int
}

// Add adds o into s.
func (s *LossSums) Add(o LossSums) {
	s.Loss += o.Loss
	s.Top1 += o.Top1
	s.Top5 += o.Top5
	s.Samples += o.Samples
}

// LossBackend is implemented by backends that compute the loss on their
// device.
type LossBackend interface {
	NewLoss(LossSpec) (LossOp, error)
}

// LossOp is softmax cross-entropy whose sums stay on the device.
type LossOp interface {
	// Forward takes the logits (N×K) and labels, adds the batch's sums
	// to the op's, and returns dL/dlogits (owned by the op) for the
	// loss averaged over the batch, multiplied by gradScale.
	Forward(logits Tensor, labels []int, gradScale float64) (Tensor, error)
	// Sums returns the sums added since the last call and zeroes them:
	// the one read (and synchronisation) of a logging interval.
	Sums() (LossSums, error)
	Close()
}

// hostLoss is LossOp over CrossEntropy.
type hostLoss struct {
	ce   *CrossEntropy
	sums LossSums
}

var _ LossOp = (*hostLoss)(nil)

func (l *hostLoss) Forward(logits Tensor, labels []int, gradScale float64) (Tensor, error) {
	l.ce.GradScale = gradScale
	r, dl, err := l.ce.Forward(logits, labels, true)
	if err != nil {
		return nil, err
	}
	l.sums.Add(LossSums{Loss: r.Loss * float64(r.Samples), Top1: r.Correct1, Top5: r.Correct5, Samples: r.Samples})
	return dl, nil
}

func (l *hostLoss) Sums() (LossSums, error) {
	s := l.sums
	l.sums = LossSums{}
	return s, nil
}

func (l *hostLoss) Close() { l.ce.Close() }

// newLoss is b's LossOp, or the host adapter.
func newLoss(b Backend, s LossSpec) (LossOp, error) {
	if lb, ok := b.(LossBackend); ok {
		return lb.NewLoss(s)
	}
	ce := NewCrossEntropy(b)
	ce.LabelSmoothing = s.LabelSmoothing
	return &hostLoss{ce: ce}, nil
}

// ---- input ----

// ByteBatch is a batch of 8-bit images, N×H×W×C (the layout decoders
// write; N×C×H×W when CHW, as Images keeps them), to be normalised per
// channel as (v/255 − Mean[c])/Std[c] into N×C×H×W float32, in one of two
// float32 arithmetics: Images.Fill's, v·(1/(255·Std)) + (−Mean/Std), by
// default; with Torch, torchvision's ToTensor and Normalize,
// ((v/255) − Mean)/Std, a division each (augment.Normalizer's table, so
// the bits of the loader's f32-chw batches).
type ByteBatch struct {
	Pixels    []byte
	N         int
	H, W, C   int
	Mean, Std []float32 // per channel (len C), or one value for all
	CHW       bool      // Pixels are N×C×H×W
	Torch     bool      // torchvision's arithmetic (the loader's), not Fill's
	Flip      bool      // each image mirrored left to right (flip test-time augmentation)
}

// ByteInputBackend is implemented by backends that normalise 8-bit input
// on their device (a quarter of the bytes to copy).
type ByteInputBackend interface {
	NewByteInput() (ByteInputOp, error)
}

// ByteInputOp writes a normalised ByteBatch into a tensor made by
// NewTensor (N×C×H×W). Like Tensor.Write it may run while ops run on
// other tensors.
type ByteInputOp interface {
	Normalize(dst Tensor, b ByteBatch) error
	Close()
}

// hostByteInput is ByteInputOp on the host: NormalizeHWC, then Write.
type hostByteInput struct{ buf []float32 }

func (h *hostByteInput) Normalize(dst Tensor, b ByteBatch) error {
	n := b.N * b.C * b.H * b.W
	if cap(h.buf) < n {
		h.buf = make([]float32, n)
	}
	h.buf = h.buf[:n]
	if err := NormalizeHWC(h.buf, b); err != nil {
		return err
	}
	return dst.Write(h.buf)
}

func (h *hostByteInput) Close() {}

func newByteInput(b Backend) (ByteInputOp, error) {
	if bb, ok := b.(ByteInputBackend); ok {
		return bb.NewByteInput()
	}
	return &hostByteInput{}, nil
}

// NormalizeHWC writes b normalised into dst (N×C×H×W; b's pixels HWC or,
// with CHW, already planar) in b's arithmetic: Images.Fill's,
// float32(v)·(1/(255·std)) + (−mean/std), or with Torch torchvision's,
// (float32(v)/255 − mean)/std; either gives the same bits as the host
// code it names. With Flip, each image is mirrored left to right.
func NormalizeHWC(dst []float32, b ByteBatch) error {
	hw := b.H * b.W
	if len(b.Pixels) != b.N*hw*b.C || len(dst) != len(b.Pixels) {
		return fmt.Errorf("train: byte batch of %d bytes for %d×%d×%d×%d into %d values", len(b.Pixels), b.N, b.H, b.W, b.C, len(dst))
	}
	// One table per channel: 256 values, each computed in b's arithmetic.
	lut := make([][256]float32, b.C)
	for c := range b.C {
		m, s := channel(b.Mean, c, 0), channel(b.Std, c, 1)
		if s == 0 {
			s = 1
		}
		scale, shift := 1/(255*s), -m/s
		for v := range 256 {
			if b.Torch {
				x := float32(v) / 255
				x -= m
				lut[c][v] = x / s
			} else {
				lut[c][v] = float32(v)*scale + shift
			}
		}
	}
	for n := range b.N {
		src := b.Pixels[n*hw*b.C : (n+1)*hw*b.C]
		out := dst[n*hw*b.C : (n+1)*hw*b.C]
		for c := range b.C {
			plane, t := out[c*hw:(c+1)*hw], &lut[c]
			switch {
			case b.Flip:
				for i := range hw {
					j := i + b.W - 1 - 2*(i%b.W) // the mirrored column's pixel
					if b.CHW {
						plane[i] = t[src[c*hw+j]]
					} else {
						plane[i] = t[src[j*b.C+c]]
					}
				}
			case b.CHW:
				for i, v := range src[c*hw : (c+1)*hw] {
					plane[i] = t[v]
				}
			default:
				for i := range hw {
					plane[i] = t[src[i*b.C+c]]
				}
			}
		}
	}
	return nil
}

func channel(v []float32, c int, def float32) float32 {
	switch {
	case len(v) == 0:
		return def
	case len(v) == 1:
		return v[0]
	}
	return v[c]
}

// ---- input already on the device ----

// DeviceRows is a batch that is already in device memory, where a batch
// decoder wrote it (a GPU decode stage, loader.IterStaged): N rows at
// address Ptr of Device, each RowBytes long, either C×H×W float32 already
// normalised (U8 false), or H×W×C bytes to normalise per channel as
// ByteBatch's (U8 true, Mean and Std). The memory is its producer's: it
// stays valid until Done is called, which the trainer does once for every
// batch it is given, as soon as the rows are read (they go back to the
// producer's ring).
type DeviceRows struct {
	Device     string // where the rows are: "cuda:0", as DeviceOf names the backend's device
	Ptr        uint64
	N, C, H, W int
	RowBytes   int
	U8         bool
	Mean, Std  []float32
	Torch      bool // U8 rows normalised in torchvision's arithmetic (ByteBatch.Torch)
	Done       func()
}

// refuse gives the rows back (Done) and says why they were not read: a
// consumer outside a training step (evaluation, BatchNorm
// recalibration) takes batches in host memory.
func (r *DeviceRows) refuse() error {
	r.release()
	return fmt.Errorf("%w: rows on %s, where evaluation and BatchNorm recalibration take batches in host memory", ErrDeviceRows, r.Device)
}

// release calls Done once.
func (r *DeviceRows) release() {
	if r != nil && r.Done != nil {
		d := r.Done
		r.Done = nil
		d()
	}
}

// DeviceInputBackend is implemented by backends that read batches from
// their device's memory themselves (DeviceRows): the input never crosses
// to the host.
type DeviceInputBackend interface {
	NewDeviceInput() (DeviceInputOp, error)
}

// DeviceInputOp writes rows [lo, hi) of a DeviceRows into a tensor made by
// NewTensor ((hi−lo)×C×H×W), normalised, and returns once it has read them,
// so that the rows' memory may be reused; the rest of the backend's queued
// work may still be running. Like ByteInputOp it may run while ops run on
// other tensors.
type DeviceInputOp interface {
	Load(dst Tensor, r DeviceRows, lo, hi int) error
	Close()
}

// ErrDeviceRows is the error of a backend that cannot read DeviceRows
// (the host backends, and a device backend on another device).
var ErrDeviceRows = errors.New("train: the batch is in device memory the backend cannot read")

func newDeviceInput(b Backend, r *DeviceRows) (DeviceInputOp, error) {
	if db, ok := b.(DeviceInputBackend); ok {
		if dev := DeviceOf(b); dev != r.Device {
			return nil, fmt.Errorf("%w: rows on %s, backend %s on %s", ErrDeviceRows, r.Device, b.Name(), dev)
		}
		return db.NewDeviceInput()
	}
	return nil, fmt.Errorf("%w: rows on %s, backend %s on %s (decode on the cpu, or train on %s)", ErrDeviceRows, r.Device, b.Name(), DeviceOf(b), r.Device)
}

// ---- ops taking their weights as tensors ----

// DeviceConvOp is a ConvOp of a ParamStore backend that takes its weights
// as the State's tensors.
type DeviceConvOp interface {
	ForwardDevice(x, w, b Tensor) (Tensor, error)
	BackwardDevice(dy, w, dw, db Tensor, needDX bool) (Tensor, error)
}

// DeviceLinearOp is DeviceConvOp for LinearOp.
type DeviceLinearOp interface {
	ForwardDevice(x, w, b Tensor) (Tensor, error)
	BackwardDevice(dy, w, dw, db Tensor, needDX bool) (Tensor, error)
}

// DeviceBatchNormOp is a BatchNormOp of a ParamStore backend: its scale,
// shift and running statistics are tensors, and a training Forward
// updates the running statistics itself, with PyTorch's rule
// running = (1−momentum)·running + momentum·batch (the unbiased variance,
// count/(count−1)), in float32 as BatchNorm2D does on the host.
type DeviceBatchNormOp interface {
	ForwardDevice(x, gamma, beta, runMean, runVar Tensor, momentum float32, training bool) (Tensor, error)
	BackwardDevice(dy, gamma, beta, dgamma, dbeta Tensor) (Tensor, error)
}

// ReLUDeferringConvOp is a ConvOp whose fused ReLU (ConvSpec.ReLU) can be
// left to the op reading its output: with DeferReLU(true) its Forward
// returns the values before the ReLU (the bias added) and its Backward
// takes the gradient already masked by the ReLU. Sequential hands a
// Conv2D's ReLU so to a BatchNorm2D right after it whose op is a
// ReLUInputBatchNormOp (ThinNet's conv, ReLU, BatchNorm).
type ReLUDeferringConvOp interface {
	DeferReLU(on bool)
}

// ReLUInputBatchNormOp is a BatchNormOp that can normalise ReLU(x) as it
// reads x: with ReLUInput(true) every Forward (training and evaluation)
// reads ReLU(x), and Backward returns the gradient with respect to x,
// zero where x > 0 is false. The same arithmetic as a ReLU of its own
// before it (relu_f, the mask x > 0), so the same bits, one pass over the
// activations fewer each way.
type ReLUInputBatchNormOp interface {
	ReLUInput(on bool)
}

// ReLUOutputBatchNormOp is a BatchNormOp that can apply the ReLU layer
// after it: with ReLUOutput(true) every Forward (training and evaluation)
// writes ReLU(y), and Backward takes the gradient of ReLU(y), masking it
// where y > 0 is false as the ReLU's backward would (y computed again from
// the forward's statistics, to the same bits). The same arithmetic as the
// ReLU layer, one pass over the activations fewer each way. Sequential
// folds a ReLU right after a BatchNorm2D so (ResNet's BatchNorm, ReLU).
type ReLUOutputBatchNormOp interface {
	ReLUOutput(on bool)
}

// AddReLUOp is a ReLUOp that can take the sum it rectifies:
// ForwardSum(a, b) is Forward(a + b) — the float32 sum, then the ReLU —
// in one pass, Backward as after that Forward. Residual ends so
// (ReLU(Main(x) + Shortcut(x))), one pass over the block's output fewer
// and the same bits.
type AddReLUOp interface {
	ForwardSum(a, b Tensor) (Tensor, error)
}

// SumReLUBatchNormOp is an AddReLUOp that can take its sum from a
// BatchNorm as the BatchNorm writes its output: ForwardBatchNormSum is
// ForwardSum(bn's Forward(x), s) — ReLU(BatchNorm(x) + s) — in the
// BatchNorm's own pass over its output (cuDNN's BN_ADD_ACTIVATION). A
// residual block whose main path ends in a BatchNorm ends so: two passes
// over the block's output fewer and the same bits. The output is the
// ReLUOp's, as ForwardSum's, and its Backward and BackwardSum are as
// after ForwardSum; bn keeps its input and statistics for its own
// Backward, which takes the gradient of its output, the sum's. ok false:
// this op cannot with bn (another backend's op, an output bn hands on in
// 16 bits or rectifies itself) and nothing ran.
type SumReLUBatchNormOp interface {
	AddReLUOp
	ForwardBatchNormSum(bn BatchNormOp, x, s, gamma, beta, runMean, runVar Tensor, momentum float32, training bool) (y Tensor, ok bool, err error)
}

// ReLUSumBackwardOp is a ReLUOp that can take the gradient of its output
// as a sum: BackwardSum(a, b) is Backward(a + b) — the float32 sum, then
// the mask — in one pass. A residual block whose input is the block
// before's output ends its backward so (its main path's and shortcut's
// input gradients, through the block before's ReLU: Sequential's pair),
// and the block before takes that gradient as its ReLU's; one pass over
// the block's input fewer and the same bits.
type ReLUSumBackwardOp interface {
	BackwardSum(a, b Tensor) (Tensor, error)
}

// LowGradSumOp is a ReLUSumBackwardOp whose BackwardSum takes a
// convolution's 16-bit input gradient as it is (LowGradOp), when
// SumsLowGrads says so (under bf16 and fp16).
type LowGradSumOp interface {
	SumsLowGrads() bool
}

// LowCopyOp is an AddReLUOp that can write its output rounded to 16 bits
// too (under bf16 and fp16), as the convolutions after it take their
// input: a residual block's output for the next block's first
// convolutions, which read that copy instead of casting (Sequential's
// pair); the same bits as their casts.
type LowCopyOp interface {
	KeepLowCopy(on bool)
}

// LowGradOp is a ConvOp that can hand its input gradient back in 16 bits
// as the 16-bit convolution wrote it, without the cast to float32 after
// it, even where its input was float32: the first convolution of a
// residual block's main path and of its shortcut, whose gradients the
// block before's LowGradSumOp adds (Sequential's pair).
type LowGradOp interface {
	KeepLowGrad(on bool)
}

// LowOutputOp is an op (a ConvOp, a BatchNormOp) that can hand its output
// on in 16 bits (under bf16 and fp16) to an op that takes them as they
// are, a LowInputOp, and take that op's input gradient back in 16 bits:
// a convolution's output as cuDNN wrote it, without the cast to float32
// after it and the cast of its gradient back; a BatchNorm's output
// rounded as the convolution after it would have cast it, its gradient
// as cuDNN wrote it. The same values (the widening is exact and the
// rounding the one the cast would make), two passes over the activations
// fewer. The tensor it returns after KeepLowOutput(true) is for that op
// alone (Read and Write still convert). The op decides each Forward
// whether it can (a bias or a ReLU of its own to add in float32, or a
// layout the reader cannot take, keep the cast). Sequential pairs a
// Conv2D and a BatchNorm2D right after it, either way round, whose ops
// are a LowOutputOp and a LowInputOp.
type LowOutputOp interface {
	KeepLowOutput(on bool)
}

// LowInputOp is an op that can take a LowOutputOp's 16-bit output: with
// LowInput(true) its Forward reads it (widened as read, or as its 16-bit
// operand), and its Backward returns the input gradient in the same 16
// bits.
type LowInputOp interface {
	LowInput(on bool)
}

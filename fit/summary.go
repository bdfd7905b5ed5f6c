package fit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"

	"github.com/faster-training/faster/train"
)

// Summary is what a run did: the JSON object `faster train --json` prints,
// which `faster bench train` and the PyTorch peer's script
// (bench/torch_train.py) write and read alike. Times are seconds; the
// accuracies are fractions. docs/train.md documents the fields.
type Summary struct {
	Model     string `json:"model"`
	Backend   string `json:"backend"`
	Device    string `json:"device"`     // where the backend ran: cpu, cuda:0 (train.DeviceOf)
	LossEvery int    `json:"loss_every"` // steps between reads of the training loss (Config.LogEvery)
	// DecodeDevice is the model's GPU (cuda:0) when the training images
	// were decoded there, their batches staying in device memory (absent:
	// the cpu); DecodeFallbacks the images it handed to the CPU decoder,
	// DecodeShared those it gave it as its share (data.cpu_share).
	DecodeDevice    string `json:"decode_device,omitempty"`
	DecodeFallbacks int64  `json:"decode_fallbacks,omitempty"`
	DecodeShared    int64  `json:"decode_shared,omitempty"`
	// InputLayout is the layout of the loader's training batches (data
	// .layout): u8-hwc when their bytes went to the model's backend,
	// which normalised them (on a GPU, a quarter of the bytes copied);
	// f32-chw when the loader normalised them; absent for IDX data.
	InputLayout string `json:"input_layout,omitempty"`
	// HostCopies counts the first device's copies from host memory where
	// its backend counts them (a GPU's pinned staging; absent otherwise,
	// and when it made none through pinned memory).
	HostCopies *train.HostCopies `json:"host_copies,omitempty"`
	// Profile is where the last epoch's device time went
	// (parallel.profile), per step.
	Profile      *ProfileSummary    `json:"profile,omitempty"`
	Strategy     string             `json:"strategy"`
	Devices      int                `json:"devices"`    // devices per process (dp)
	WorldSize    int                `json:"world_size"` // processes (ddp)
	SyncBN       bool               `json:"sync_bn"`
	Precision    string             `json:"precision"`                  // fp32, bf16, fp16
	NativeAMP    bool               `json:"native_precision,omitempty"` // reduced precision on native instructions
	Autotune     []train.TuneChoice `json:"autotune,omitempty"`
	TuneSeconds  float64            `json:"tune_seconds,omitempty"` // of Seconds, spent autotuning
	Overlap      bool               `json:"overlap"`
	ZeroGrad     string             `json:"zero_grad"` // set_to_none or zero
	SkippedSteps int                `json:"skipped_steps,omitempty"`
	CUDAGraph    bool               `json:"cuda_graph,omitempty"` // each step a captured graph, replayed
	// GraphSteps counts how the backend ran the steps with CUDAGraph:
	// eager (each key's warm-up, a step whose calls left the record),
	// captured, replayed, and why the device refused a capture, if it did
	// (then the steps since ran eagerly).
	GraphSteps *train.CaptureStats `json:"cuda_graph_steps,omitempty"`
	// AlreadyDone: the checkpoint had trained Epochs already; nothing was
	// trained and the test figures are its evaluation.
	AlreadyDone bool    `json:"already_complete,omitempty"`
	Threads     int     `json:"threads"`
	NormThreads int     `json:"norm_threads,omitempty"`
	Winograd    bool    `json:"winograd,omitempty"`
	Batch       int     `json:"batch"`
	LR          float64 `json:"lr"`
	Epochs      int     `json:"epochs"`
	Classes     int     `json:"classes"`
	TrainImages int     `json:"train_images"`
	TestImages  int     `json:"test_images"`
	Images      int     `json:"images"`  // images trained in this run
	Seconds     float64 `json:"seconds"` // training time of this run (excluding evaluation)
	// CPUSeconds is the process's CPU time (user and system, all threads)
	// over the same stretches as Seconds.
	CPUSeconds   float64 `json:"cpu_seconds"`
	ImagesPerSec float64 `json:"images_per_sec"`
	MsPerStep    float64 `json:"ms_per_step,omitempty"` // Seconds per step of the global batch, in ms
	TestAccuracy float64 `json:"test_accuracy"`
	TestTop5     float64 `json:"test_top5"`
	TestLoss     float64 `json:"test_loss"`
	WallSeconds  float64 `json:"wall_seconds"`
	// WeightsSHA256 digests the final parameters and buffers (float32
	// little-endian, in state_dict order): equal digests, equal models.
	WeightsSHA256 string         `json:"weights_sha256"`
	PerEpoch      []EpochSummary `json:"per_epoch"`

	// The recipe.
	Recipe         string  `json:"recipe,omitempty"`
	Schedule       string  `json:"schedule"`
	LabelSmoothing float64 `json:"label_smoothing"`
	Nesterov       bool    `json:"nesterov"`
	EMA            float64 `json:"ema"`
	EMAWarmup      bool    `json:"ema_warmup,omitempty"`
	TTA            string  `json:"tta"`
	Resolutions    []int   `json:"resolution_schedule,omitempty"`
	// Curve lists every evaluation (each EvalConfig.Every steps and each
	// epoch's end); EvalSeconds is their time, outside Seconds.
	Curve          []CurvePoint `json:"curve"`
	EvalSeconds    float64      `json:"eval_seconds"`
	TargetAccuracy float64      `json:"target_accuracy,omitempty"`
	// SecondsToTarget is the training time until an evaluation first
	// reached TargetAccuracy (null: never), at StepsToTarget steps.
	SecondsToTarget *float64 `json:"seconds_to_target"`
	StepsToTarget   int      `json:"steps_to_target,omitempty"`
	// FixResBN reports the BatchNorm recalibration at the test resolution
	// and the test figures before it (the Test* fields above are those
	// after it).
	FixResBN *FixResSummary `json:"fixres_bn,omitempty"`
	// DDP is rank 0's gradient communication (strategy ddp).
	DDP *DDPSummary `json:"ddp,omitempty"`
}

// EpochSummary is one epoch of a Summary.
type EpochSummary struct {
	Epoch        int     `json:"epoch"`
	TrainLoss    float64 `json:"train_loss"`
	TrainAcc     float64 `json:"train_accuracy"`
	TestLoss     float64 `json:"test_loss"`
	TestAccuracy float64 `json:"test_accuracy"`
	TestTop5     float64 `json:"test_top5"`
	Images       int     `json:"images"`
	Seconds      float64 `json:"seconds"`
	ImagesPerSec float64 `json:"images_per_sec"`
	MsPerStep    float64 `json:"ms_per_step,omitempty"` // Seconds per step of the global batch, in ms
	Resolution   int     `json:"resolution,omitempty"`  // the training side (progressive resizing)
}

// CurvePoint is one evaluation of the test split during training.
type CurvePoint struct {
	Step         int     `json:"step"`    // global steps trained
	Epoch        float64 `json:"epoch"`   // the same in epochs
	Seconds      float64 `json:"seconds"` // training seconds so far, evaluation excluded
	TestAccuracy float64 `json:"test_accuracy"`
	TestLoss     Metric  `json:"test_loss"`
}

// DDPSummary is the gradient communication of a ddp rank's steps.
type DDPSummary struct {
	Steps       int   `json:"steps"`
	BucketBytes []int `json:"bucket_bytes"` // of a step, in the order they are sent
	// AllReducePerStep is the buckets' all-reduce time per step (running
	// beside the backward pass); ExposedPerStep the time per step the rank
	// waited for them once its backward pass had ended (the part not
	// hidden behind it).
	AllReducePerStep float64 `json:"allreduce_seconds_per_step"`
	ExposedPerStep   float64 `json:"exposed_wait_seconds_per_step"`
	// AlonePerStep is the time of a step's all-reduces with no compute
	// (the same buckets, ParallelConfig.TimeAllReduce rounds after
	// training).
	AlonePerStep *float64 `json:"allreduce_alone_seconds_per_step,omitempty"`
	AloneRounds  int      `json:"allreduce_alone_rounds,omitempty"`
}

// FixResSummary is the FixRes adjustment's part of a Summary.
type FixResSummary struct {
	Resolution int `json:"resolution"` // of the recalibration (the test resolution)
	train.BNRecalibration
	// The test figures before the adjustment; the summary's test_accuracy,
	// test_top5 and test_loss are those after it.
	TestAccuracyBefore float64 `json:"test_accuracy_before"`
	TestTop5Before     float64 `json:"test_top5_before"`
	TestLossBefore     Metric  `json:"test_loss_before"`
	EvalSeconds        float64 `json:"eval_seconds"`
}

// Metric is a float64 that JSON writes as null when it is not finite
// (encoding/json refuses NaN and ±Inf): a loss may be.
type Metric float64

// MarshalJSON writes m, or null when it is not finite.
func (m Metric) MarshalJSON() ([]byte, error) {
	if f := float64(m); math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(m))
}

// MarshalJSON writes the losses, which may not be finite, as metrics.
func (e EpochSummary) MarshalJSON() ([]byte, error) {
	type plain EpochSummary
	return json.Marshal(struct {
		plain
		TrainLoss Metric `json:"train_loss"`
		TestLoss  Metric `json:"test_loss"`
	}{plain(e), Metric(e.TrainLoss), Metric(e.TestLoss)})
}

// MarshalJSON writes the test loss, which may not be finite, as a metric.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	return json.Marshal(struct {
		plain
		TestLoss Metric `json:"test_loss"`
	}{plain(s), Metric(s.TestLoss)})
}

// WeightsDigest is the SHA-256 of net's parameters and buffers, each value
// as float32 little-endian, in order (Summary.WeightsSHA256).
func WeightsDigest(net train.Layer) string {
	h := sha256.New()
	var b []byte
	for _, p := range append(net.Params(), net.Buffers()...) {
		b = b[:0]
		for _, v := range p.Value {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func ptr[T any](v T) *T { return &v }

// ProfileSummary is a profiled epoch (parallel.profile): its steps, the
// device's busy and idle milliseconds a step, and the ops by device time
// (train.DeviceProfile's rows, summed over the epoch's steps).
type ProfileSummary struct {
	Epoch      int                `json:"epoch"`
	Steps      int                `json:"steps"`
	BusyMs     float64            `json:"busy_ms_per_step"`
	IdleMs     float64            `json:"idle_ms_per_step"`
	CallsPer   float64            `json:"calls_per_step"`
	Rows       []train.ProfileRow `json:"rows"`
	WallMsStep float64            `json:"wall_ms_per_step"` // the profiled epoch's training time a step, events included
}

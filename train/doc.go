// Package train is a small, fast training engine for convolutional networks
// on the CPU: tensors held in a backend's memory, layers with forward and
// backward passes, models (the Faster Training study's ThinNet, ResNet-18), SGD with momentum
// and weight decay, learning-rate schedules, checkpoints and metrics.
//
// # Backends
//
// The arithmetic of every layer runs in a Backend. Two exist:
//
//   - "onednn" (package train/onednn, cgo): Intel oneDNN primitives.
//     Activations stay in oneDNN's preferred (blocked) memory formats for the
//     whole step; only weights are reordered, and every buffer is allocated
//     once per shape. Blank-import train/onednn to register it.
//   - "reference" (this package, pure Go): plain NCHW loops accumulating in
//     float64. Slow and exact: it serves CGO_ENABLED=0 builds and is what the
//     gradient checks compare oneDNN against.
//
// Open picks a backend by name; Default prefers onednn when registered.
//
// # Data layout and ownership
//
// Tensors are batches of feature maps (N, C, H, W) or rows (N, F). Their
// host form (Tensor.Read, Tensor.Write) is plain row-major float32, whatever
// the backend keeps internally. Parameters (weights, biases, BatchNorm
// scale and shift) and their gradients are plain Go slices in PyTorch's
// layouts (conv weights OIHW, linear weights out×in), so the optimiser,
// checkpoints and comparisons with PyTorch need no backend. A layer's
// output tensor belongs to the layer and stays valid until its next
// Forward; Backward overwrites (does not accumulate) parameter gradients.
//
// # Device-resident training
//
// A backend may keep the parameters, gradients, running statistics, the
// optimiser's momentum, the EMA and the loss's sums on its device by
// implementing optional interfaces (ParamStore, LossBackend,
// ByteInputBackend, the ops' DeviceConvOp, DeviceLinearOp and
// DeviceBatchNormOp, Syncer, DeviceNamer, DeviceMemory), each found by a
// type assertion. The trainer works through State and LossOp; backends
// without them get host adapters doing what the engine always did, so the
// CPU backends' arithmetic is unchanged. With a device State bound, a
// Param's Value is a host mirror, refreshed before a checkpoint; the
// state lives for one TrainEpoch or TrainStream call, after which the host
// values are the network's again. DeviceReference implements
// every interface in pure Go, to test the device path against the host's.
//
// # Usage
//
//	b, _ := train.Default(train.BackendOptions{Threads: 2})
//	net, _ := train.NewThinNet(b, train.ThinNetConfig{InChannels: 1, Classes: 10}, seed)
//	t := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.001), 512, seed)
//	res, err := t.TrainEpoch(ctx, data, nil)
//	m, err := train.Evaluate(ctx, b, net, test, 512)
//
// # Parallel and mixed-precision training
//
// Trainer.AddReplica adds devices of one process (data parallelism, like
// torch.nn.DataParallel); Trainer.Distribute makes the trainer one rank of
// distributed data parallelism over a collective.Comm, gradients
// all-reduced in buckets while the backward pass runs (like
// DistributedDataParallel); SyncBatchNorm makes BatchNorm use the whole
// batch's statistics. BackendOptions.Precision selects bf16 or fp16
// convolutions and products (fp32 master weights; GradScaler for fp16);
// BackendOptions.Autotune times candidate implementations per shape. The
// trainer stages the next batch while a step runs. See docs/parallel.md.
//
// # Concurrency
//
// A Backend, its tensors and the layers built on it are used by one
// goroutine at a time, except that Tensor.Write of a tensor made by
// NewTensor may run while ops run on other tensors (the trainer stages the
// next batch that way). The oneDNN backend parallelises each primitive
// itself (OpenMP), so TrainEpoch locks its goroutine to one OS thread for
// the duration of the epoch, keeping one OpenMP thread pool.
package train

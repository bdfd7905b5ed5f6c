// Package gpudecode is the loader's batch-decode stage on a GPU (issue 38
// §2): it registers the "cuda" device with package loader
// (loader.RegisterBatchDecoder), so that a binary importing it serves
// Options.Device "cuda" / "cuda:N" (`faster bench load --device cuda`).
// The stage is package nvjpeg's Decoder: each batch's JPEGs decoded by
// nvJPEG over their crops' regions of interest, resampled, flipped and
// normalised by its kernels into device buffers of its own; the images
// nvJPEG cannot take (nvjpeg.CanDecode, or refused by both backends) are
// decoded by the loader's CPU path (DecodeJob.DecodeCPU) on up to Workers
// goroutines and uploaded into their rows, counted as the batch's
// fallback.
//
// The rows equal the CPU path's with FullDecode (the crop decoded at full
// scale, then Pillow's resample) up to the two JPEG decoders' IDCT and
// colour conversion; the CPU path's default DCT-scaled decode differs
// more (docs/pipeline.md). The buffers are device memory of the decoder's
// GPU (BatchBuffer's Host is nil; DeviceBuffer gives the address), freed
// by the loader's Close.
package gpudecode

// Package downscale shrinks an image dataset on disk, the job of the Faster Training study's
// resize_imagenet.py done right: `faster resize` is its command line.
//
// # What Run does
//
// Run mirrors every folder and file under a source root into a destination
// (all splits, not only train/), with these rules per file:
//
//   - An image (a file with an image extension, source.IsImageName) whose
//     shorter edge exceeds MaxSize is resized so that its shorter edge is
//     exactly MaxSize and the longer is int((long/short) * MaxSize), as the
//     seed computes it (see Size), with the exact area average of OpenCV's
//     INTER_AREA (augment.Area). It is written under the same name, in the
//     format the name's extension selects, as cv2.imwrite does: PNG for
//     .png, JPEG (Quality, default 90, 4:2:0, baseline, standard Huffman
//     tables, as cv2.imwrite writes) for everything else.
//     Grayscale images stay one-channel.
//   - An image already small enough is copied byte for byte, after a cheap
//     decode (1/8 DCT scale) that rejects corrupt and truncated files.
//   - Other files are copied, or skipped with NonImages = SkipNonImages.
//   - A file that cannot be read or decoded (empty, truncated, corrupt, an
//     unknown format, over the pixel limit) is listed in Result.Failures
//     and nothing is written for it; the run goes on.
//
// # Decoding: DCT-scaled JPEG
//
// A JPEG is decoded at 1/d size in the DCT domain (libjpeg-turbo's scaled
// IDCT, much cheaper than a full decode) for the largest d in {8, 4, 2}
// that keeps the decoded shorter edge at least MinScaledEdge (2) times
// MaxSize; the area filter then resamples the exact source box (W/d x H/d)
// to the output size, so the geometry is unchanged. This stays 48 dB PSNR or
// more from the full-decode path on photographs. NoScaledDecode forces the
// full decode: the path that matches cv2.imread + cv2.resize(INTER_AREA) at
// 77 dB PSNR (TestAreaMatchesOpenCV) when RGB is set too (see below).
// ImageNet-sized photos (shorter edge 375 to 256) always take the
// full-decode path.
//
// # Resizing in the stored planes
//
// A 4:2:0 YCbCr JPEG (what cameras, and ImageNet, store) decoded at full
// size and written as JPEG is resized in its planes as stored: luma at full
// and chroma at half resolution, each with the exact area filter and the
// same scale factors, and the output written from the resized planes
// (imgcodec.DecodeJPEG420, EncodeJPEG420). The RGB path (OpenCV's) upsamples
// the chroma, converts to RGB, resizes three channels, converts back and
// downsamples the chroma again; the planar path skips all four steps and
// resizes half the samples. Its output is as close to the RGB path's
// resized pixels as the RGB path's own output is, and within 44 dB of that
// output, on photographs (TestPlanarPSNR). Other JPEGs (gray, 4:4:4,
// 4:2:2, CMYK), DCT-scaled decodes, EXIF-rotated images and PNG go through
// RGB; Options.RGB sends everything there.
//
// # EXIF orientation
//
// cv2.imread rotates JPEGs by their EXIF orientation; PIL (and so
// torchvision's ImageFolder) does not. By default Run keeps the stored
// orientation, so that the resized set shows a PIL-based loader the same
// pixels as the original set; EXIF = true applies the orientation before
// resizing (Orientation parses it; the re-encoded JPEG carries no EXIF).
// Copied images keep their bytes, EXIF included.
//
// # Atomic, resumable, interruptible
//
// Each output is written to a hidden temporary file in its folder
// (".NAME.tmp-*", recognised by atomicfile.IsTemp) and renamed over its
// name only when complete, so no reader, and no rerun, ever sees a partial
// output; cancellation of the context removes the temporary file of every
// output in flight. A rerun skips a file whose output exists, is not older
// than the source, and is complete: as large as the source (a copy) or
// beginning and ending like a JPEG or PNG. Options are not recorded:
// rerun with the same options, or into a fresh destination.
//
// Outputs are not fsynced one by one (an fsync per file costs more than
// resizing it); the destination's file system is synced once at the end
// (syncfs). A machine crash in between can leave renamed outputs empty or
// short; the completeness check above makes a rerun redo them. Sync
// fsyncs every output instead.
//
// # Concurrency
//
// Run processes Workers files at a time (a bounded pool; each worker owns
// its resizer and buffers) and joins all of its goroutines before it
// returns. Options.Progress is called from the workers. Run may be called
// concurrently with different destinations.
package downscale

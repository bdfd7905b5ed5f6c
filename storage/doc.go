// Package storage reads datasets from local directories and from object
// stores: s3://, gs://, http:// and https:// URLs. Local, S3 and GCS go
// through gocloud.dev/blob (fileblob, s3blob, gcsblob); HTTP is plain
// net/http with Range requests.
//
// # Roots and names
//
// Open takes a dataset root and returns a Store; objects are then named
// relative to it with slashes:
//
//	/data/shards                               local directory (or file:///data/shards)
//	s3://bucket/imagenet?endpoint=http://127.0.0.1:7070&region=us-east-1
//	gs://bucket/imagenet                       (?endpoint=http://host:port for an emulator)
//	https://host/imagenet                      (List needs an HTML directory index)
//
// S3 credentials, region and endpoint come from the URL's query or the AWS
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
// AWS_ENDPOINT_URL_S3, AWS_PROFILE…); a custom endpoint implies path-style
// addressing. docs/storage.md lists every parameter.
//
// # Reading
//
// A Reader (NewReader, NewRangeReader) serves one object front to back. One
// goroutine issues a single ranged GET and fills a fixed ring of N buffers of
// S bytes (Options.ReadAheadBuffers, Options.BufferSize) while the caller
// reads:
//
//	  ┌──────────── free: empty buffers (cap N) ◄──────────────┐
//	  ▼                                                          │
//	filler ──► full: filled buffers, in order (cap N) ──► Read / WriteTo
//	(one goroutine, one ranged GET,                       (the caller; gives
//	 resumed at the exact offset                           each buffer back
//	 after a failure)                                      once consumed)
//
// Both channels hold at most N buffers, so memory is N·S per Reader and the
// filler blocks when the caller is slow; buffers come from and return to the
// Store, and steady-state reading allocates nothing. Close cancels and joins
// the goroutine.
//
// A ReaderAt (OpenReaderAt) serves indexed access: each ReadAt is one ranged
// GET of exactly the bytes asked for.
//
// # Failures
//
// Transient failures — connection refused or reset, HTTP 5xx, 408, 429,
// timeouts, a body cut short, a stalled body (one delivering less than
// Options.MinRate over a window of Options.StallTimeout: a byte every 20 s
// is a stall) — are retried with exponential backoff and full jitter until
// Options.Retry.Deadline passes without progress, progress being a stall
// window's worth of bytes at MinRate (a trickle does not push the deadline
// back). A broken sequential read
// resumes with a new range request from the exact byte offset where it broke,
// so a server restart of a few seconds loses and duplicates nothing; if the
// object's size or modification time changed meanwhile the read fails with
// ErrChanged rather than splice two versions. Missing objects (ErrNotExist,
// which also matches fs.ErrNotExist), denied access and bad requests fail at
// once. Every error is an *Error naming the operation, the object's URL
// (without query or password) and the byte offset.
//
// # Concurrency
//
// A Store and a ReaderAt are safe for concurrent use. A Reader is not: one
// goroutine reads it, and Close must come from that goroutine too.
package storage

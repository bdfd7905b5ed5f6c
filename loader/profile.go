package loader

import "sync/atomic"

// Profile splits where a loader's time goes per sample (Options.Profile):
// the recipe's phases are timed as they run by the CPU clock of the
// worker's thread (Linux; wall time elsewhere), summed over the workers,
// so the figures are CPU time per sample whatever the parallelism and
// whatever else the machine runs. Reading and batching are the pipeline's "read" and
// "batch" stages (their Busy time); Report puts the five together.
type Profile struct {
	read, decode, resize, normalise atomic.Int64 // nanoseconds
	reads, decoded, filled          atomic.Int64 // samples
}

// Phase is one row of a profile: a phase's CPU time per sample.
type Phase struct {
	Name          string  `json:"name"`
	MicrosPerItem float64 `json:"us_per_sample"`
	Share         float64 `json:"share"` // of the sum of the phases
}

// ProfileReport is a loader's profile with its stage statistics.
type ProfileReport struct {
	Phases []Phase `json:"phases"`
	// Clock says what the phases measure: "thread CPU time" on Linux
	// (system time included: a read from the page cache is the kernel's
	// copy), "wall time" elsewhere.
	Clock string `json:"clock"`
	// MicrosPerItem is the sum of the phases: the CPU time one sample
	// costs, so 1e6/MicrosPerItem is what one core can serve (images/s).
	MicrosPerItem   float64 `json:"us_per_sample"`
	PerCoreImagesPS float64 `json:"images_per_sec_per_core"`
}

// since adds the thread time since t (a threadClock reading) to c and
// returns the clock's reading now.
func since(c *atomic.Int64, t int64) int64 {
	now := threadClock()
	c.Add(now - t)
	return now
}

// Report returns the phases per sample: read (opening and reading the
// file or record: from the page cache, the kernel's copy), decode (the
// JPEG or PNG decode, DCT-scaled and cropped where the recipe allows, and
// the header parse before it), crop/resize (resampling the decoded region
// to the output, flip) and normalise/convert (into the batch's row; this
// is the batch copy too: rows are written in place, there is no other).
func (p *Profile) Report() ProfileReport {
	per := func(ns int64, n int64) float64 {
		if n <= 0 {
			return 0
		}
		return float64(ns) / float64(n) / 1e3
	}
	n := p.decoded.Load()
	r := ProfileReport{Clock: profileClock, Phases: []Phase{
		{Name: "read", MicrosPerItem: per(p.read.Load(), p.reads.Load())},
		{Name: "decode", MicrosPerItem: per(p.decode.Load(), n)},
		{Name: "crop/resize", MicrosPerItem: per(p.resize.Load(), n)},
		{Name: "normalise/convert + batch copy", MicrosPerItem: per(p.normalise.Load(), p.filled.Load())},
	}}
	for _, ph := range r.Phases {
		r.MicrosPerItem += ph.MicrosPerItem
	}
	for i := range r.Phases {
		if r.MicrosPerItem > 0 {
			r.Phases[i].Share = r.Phases[i].MicrosPerItem / r.MicrosPerItem
		}
	}
	if r.MicrosPerItem > 0 {
		r.PerCoreImagesPS = 1e6 / r.MicrosPerItem
	}
	return r
}

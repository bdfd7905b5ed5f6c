package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
)

// loaderFlags describe the loader a command runs; `faster bench load` and
// `faster serve` share them so that the same flags build the same pipeline.
type loaderFlags struct {
	batch      int
	transform  string
	resolution int
	layout     string
	numShards  int
	shardIndex int
	seed       uint64
	split      string
	drop       bool
	exact      bool
	global     bool
	shuffle    loader.ShuffleMode
	labelOff   int
	unlabeled  bool
	classes    int
	cache      cacheFlags
	// The recipes' parameters (torchvision's names in the help).
	cropScale, cropRatio []float64
	flipProb             float64
	resize               int
	interpolation        string
	fullDecode           bool
	fastEvalDecode       bool
	repeats              int
	sampler              string
	mean, std            []float64
	augment              augmentFlags
	device               string
	cpuShare             float64
}

// cacheFlags are --cache-dir and --cache-size: the local cache of shards
// read from a storage URL (loader.Options.CacheDir).
type cacheFlags struct {
	dir  string
	size sizeFlag
}

func (cf *cacheFlags) register(f *pflag.FlagSet) {
	f.StringVar(&cf.dir, "cache-dir", "", "keep shards read from s3://, gs:// or http(s):// in this local directory, so later epochs and runs read them locally (ranks may share it)")
	f.Var(&cf.size, "cache-size", "cap of --cache-dir, whole shards evicted least recently used first, e.g. 50G (k, M, G, T: powers of 1024; default 50G)")
}

// sizeFlag is a byte count with an optional k, M, G or T suffix (powers
// of 1024).
type sizeFlag int64

func (s *sizeFlag) String() string {
	if *s == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*s), 10)
}
func (s *sizeFlag) Type() string { return "size" }
func (s *sizeFlag) Set(v string) error {
	mult := int64(1)
	num := strings.TrimSuffix(strings.TrimSuffix(v, "B"), "i")
	if k := len(num); k > 0 {
		if i := strings.IndexByte("kKMGT", num[k-1]); i >= 0 {
			mult = int64(1) << (10 * max(i, 1)) // k and K are both 2^10
			num = num[:k-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("%q: want a positive byte count such as 50G", v)
	}
	*s = sizeFlag(n * mult)
	return nil
}

// register adds the flags to f; transforms lists the accepted transforms
// for the help text.
func (lf *loaderFlags) register(f *pflag.FlagSet, transforms string) {
	f.IntVar(&lf.batch, "batch", 256, "batch size")
	f.StringVar(&lf.transform, "transform", "train", transforms)
	f.IntVar(&lf.resolution, "resolution", 224, "output resolution")
	f.StringVar(&lf.layout, "layout", string(loader.F32CHW), "batch layout: f32-chw or u8-hwc")
	f.IntVar(&lf.numShards, "num-shards", 1, "data-parallel world size")
	f.IntVar(&lf.shardIndex, "shard-index", 0, "this rank")
	f.Uint64Var(&lf.seed, "seed", 0, "shuffle and augmentation seed")
	f.StringVar(&lf.split, "split", "train", "split of a packed dataset")
	f.VarPF(shuffleFlag{&lf.shuffle, loader.ShuffleOn}, "shuffle", "",
		"read in a new random order every epoch, drawn from --seed and the epoch (the default, except with --transform eval)").NoOptDefVal = "true"
	f.VarPF(shuffleFlag{&lf.shuffle, loader.ShuffleOff}, "no-shuffle", "", "read in the source order").NoOptDefVal = "true"
	f.BoolVar(&lf.drop, "drop", false, "every rank takes the whole batches of the smallest rank's samples, without repeats (default: ranks short of the largest one's count repeat samples, and the last batch may be partial, the same size on every rank)")
	f.BoolVar(&lf.exact, "exact", false, "every sample once across the ranks, each rank its own part with no repeats (ranks may differ by one batch; for evaluation that combines its metric at the end); with --drop a rank drops its last partial batch")
	lf.cache.register(f)
	f.BoolVar(&lf.global, "global-shuffle", false, "shards: shuffle all records by index each epoch (random reads) instead of files + interleave + buffer")
	f.IntVar(&lf.labelOff, "label-offset", 0, "add N to every stored label (-1 for TensorFlow's ImageNet shards, whose labels count from 1)")
	f.BoolVar(&lf.unlabeled, "unlabeled", false, "the data has no labels: serve a WebDataset sample without a .cls or .json label as label 0 (by default it is a bad sample)")
	f.IntVar(&lf.classes, "classes", 0, "number of classes, for data that does not record it (shards without a manifest): a label outside [0, N) after --label-offset is a bad sample")
	f.Float64SliceVar(&lf.cropScale, "crop-scale", nil, "train: RandomResizedCrop's scale range LO,HI (default 0.08,1)")
	f.Float64SliceVar(&lf.cropRatio, "crop-ratio", nil, "train: RandomResizedCrop's aspect-ratio range LO,HI (default 0.75,1.3333)")
	f.Float64Var(&lf.flipProb, "flip-prob", 0.5, "train: RandomHorizontalFlip's probability (0: no flip)")
	f.IntVar(&lf.resize, "resize", 0, "eval: Resize's shorter edge before the centre crop, --resolution to 16384 (default resolution*256/224)")
	f.StringVar(&lf.interpolation, "interpolation", "bilinear", "train and eval: the resize's interpolation, bilinear, bicubic or nearest, as PIL computes it (torchvision's InterpolationMode on PIL images)")
	f.BoolVar(&lf.fullDecode, "full-decode", false, "decode JPEGs at full size, never scaled in the DCT: torchvision's (PIL's) pixels exactly, at more decode time (default: the train recipe's random crop at least twice the output decodes at 1/2 to 1/8 scale, a few levels from PIL's, more on edges; eval always decodes at full size)")
	f.BoolVar(&lf.fastEvalDecode, "fast-eval-decode", false, "let --transform eval decode a JPEG at least twice the resize at 1/2 to 1/8 scale in the DCT: cheaper, but not torchvision's pixels (tens of levels on edges of photographs; default: full size, PIL's pixels)")
	f.IntVar(&lf.repeats, "repeated-augmentation", 0, "torchvision's RASampler (the classification reference's --ra-sampler --ra-reps N): each sample N times an epoch, each copy augmented anew, every rank serving floor(samples//256*256/ranks) of them; indexed data only (default 0: off)")
	f.StringVar(&lf.sampler, "sampler", "", "serve: indices: each epoch serves the order of dataset positions the client sends before it (faster.Loader's sampler=); indexed data only")
	f.Float64SliceVar(&lf.mean, "mean", nil, "Normalize's mean R,G,B in [0, 1] units (default ImageNet's 0.485,0.456,0.406)")
	f.Float64SliceVar(&lf.std, "std", nil, "Normalize's std R,G,B (default ImageNet's 0.229,0.224,0.225)")
	f.StringVar(&lf.device, "device", "cpu", "where batches are decoded: cpu, or cuda / cuda:N for the GPU stage (nvJPEG, the train and eval recipes; bench load)")
	f.Float64Var(&lf.cpuShare, "cpu-share", 0, "with a GPU stage: the share of each batch (0 to 1) decoded on the CPU beside the GPU, so the cores add their rate to its (rows spread evenly through the batch)")
	lf.augment.register(f)
}

// check checks the flags as the loader's spec: they fill a loader.Spec,
// whose Validate says every problem, each named by its flag (the flag
// table, flagtable.go); a usage error.
func (lf *loaderFlags) check() error {
	s := lf.spec()
	ps := append(s.Problems(), lf.zeroProblems("")...)
	if len(ps) > 0 {
		return flagProblems(ps, loaderFlagOf, nil)
	}
	return nil
}

// zeroProblems are the counts whose 0 a Spec reads as the default, given
// as 0 (the flags' defaults are 2, 31 and 3), each field under prefix.
func (lf *loaderFlags) zeroProblems(prefix string) []augment.Problem {
	var ps []augment.Problem
	for _, z := range []struct {
		field string
		v     int
		want  string
	}{{"recipe.ra_n", lf.augment.raN, "1 to 16 ops"}, {"recipe.magnitude_bins", lf.augment.bins, "2 to 1024"},
		{"recipe.augmix_severity", lf.augment.augmixSeverity, "1 to 10"}} {
		if z.v == 0 && lf.augment.fs != nil {
			ps = append(ps, augment.Problem{Field: prefix + z.field, Msg: "0: want " + z.want})
		}
	}
	return ps
}

// options returns the loader options the flags describe (their spec's;
// after check), with workers decode workers (0 = auto).
func (lf *loaderFlags) options(workers int) loader.Options {
	s := lf.spec()
	o, _ := s.Options()
	o.Workers = workers
	return o
}

// shuffleFlag is --shuffle or --no-shuffle: both set one mode, the last
// given wins, and neither leaves the loader's default (ShuffleAuto).
type shuffleFlag struct {
	mode *loader.ShuffleMode
	set  loader.ShuffleMode // the mode "true" means
}

func (f shuffleFlag) String() string { return strconv.FormatBool(f.mode != nil && *f.mode == f.set) }
func (f shuffleFlag) Type() string   { return "bool" }
func (f shuffleFlag) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	switch {
	case b:
		*f.mode = f.set
	case f.set == loader.ShuffleOn:
		*f.mode = loader.ShuffleOff
	default:
		*f.mode = loader.ShuffleOn
	}
	return nil
}

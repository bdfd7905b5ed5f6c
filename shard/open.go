package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage"
)

// OpenOptions configure Open. The zero value works: split "train", no
// cache, stop at the first damage.
type OpenOptions struct {
	// Split is the split of a packed dataset to read; "train".
	Split string
	// Manifest, if set, is the manifest of the dataset at a storage URL,
	// read already by the caller (LoadManifestAt): Open does not fetch it
	// again.
	Manifest *Manifest
	// CacheDir, if set, keeps the shards (and indexes) of a dataset read
	// from a storage URL on local disk in that directory, under CacheSize
	// bytes (storage.DefaultCacheSize when 0), evicting whole files least
	// recently used first (see storage.Cache). Local datasets ignore it.
	CacheDir  string
	CacheSize int64
	// GlobalShuffle opens TFRecord shards as an Indexed dataset read
	// through their .idx indexes instead of a Streaming one. Every shard
	// under a URL needs an index; a local one without is indexed at open
	// by reading its length headers.
	GlobalShuffle bool
	// Ranks is the number of ranks that will read the dataset (0 or 1:
	// one). With more than one, every shard's record count must be known
	// (from its index or the manifest), so that every rank can plan the
	// same number of steps; Open refuses shards whose counts it cannot
	// learn.
	Ranks int
	// Paths, if set, are more paths of the dataset at path, read with it
	// as one dataset: files or globs (a shell's expansion of
	// dir/train-* gives every shard as a path of its own), never a
	// directory or a URL.
	Paths []string
	// Skip, if set, is the skip policy for damaged data. Open reports
	// each damaged shard or region it finds (a shard or index that
	// disagrees with the manifest, a tar region that cannot be listed) to
	// Skip, with the number of samples the damage is counted against,
	// and reads around it instead of failing; an error from Skip stops
	// Open. Streaming readers then resynchronise past a damaged record
	// and return it as a Record with Bad set. Without Skip the first
	// damage is Open's (or the reader's) error.
	Skip func(d source.Damage, of int) error
	// Unlabeled reads data without labels (WebDataset samples without a
	// .cls or .json label are served as label 0); by default such a
	// sample is damaged, never class 0 for lack of its label.
	Unlabeled bool
}

// Open opens the dataset at path, a local path or a storage URL, as an
// indexed or a streaming dataset: the one place that knows the container
// formats and their layouts. A local file's format is told by its first
// bytes (see FormatOf: a TFRecord's length CRC, tar's header, gzip's and
// LMDB's magic), whatever its name.
//
//   - s3://, gs://, http(s):// (package storage): a packed dataset (its
//     manifest's Split) or a directory of shards (the Split's
//     <split>-NNNNN-of-NNNNN objects, else every *.tfrecord); read through
//     a local cache under CacheDir when set.
//   - a Caffe LMDB (a directory with data.mdb, or the file): indexed,
//     kind "lmdb".
//   - a packed directory (manifest.json, its Split): the shards it lists.
//     A Split packed as tasks and not merged (task parts under
//     .faster-parts) is refused: "not merged: run faster pack --merge".
//   - a directory without a manifest: of its data files (TFRecord, tar,
//     gzip-compressed tar: DataFiles), the Split's named
//     <split>-NNNNN-of-NNNNN, with or without an extension (TensorFlow's
//     build_imagenet_data.py writes train-00000-of-01024 and
//     validation-00000-of-00128; Split "val" finds "validation" and the
//     other way round), every one of the N there and of one shard count;
//     else, when no name carries a split, every data file. The files
//     must be of one format ("two formats" names one of each).
//   - a file, a glob, or several paths (Paths): files of one format, told
//     by their bytes; the indexes and manifest a glob matches beside the
//     shards are left out.
//   - torchvision's layouts (layouts.go), before the data files of a
//     directory are listed: CIFAR-10/100's python batches (kind "cifar")
//     and MNIST's IDX files (kind "idx"), at the path or in torchvision's
//     root, by Split ("train" or "test"); a directory with split folders
//     (a subfolder named train, val, validation or test: torchvision's
//     ImageNet layout root/train, root/val, or Kaggle's
//     ILSVRC/Data/CLS-LOC), the Split's folder as an ImageFolder, as a
//     directory of shards (webdataset's root/train/*.tar), or a flat
//     val/ labelled by Kaggle's LOC_val_solution.csv; an unknown
//     split names the folders there are, and the tars beside them are
//     not data.
//   - else an ImageFolder tree: indexed, kind "imagefolder". It has no
//     split: a Split other than "train" is an error naming the layout.
//
// TFRecord shards are kind "shards", streaming, or indexed with
// GlobalShuffle; each is checked against its .idx index (X.idx or
// X.tfrecord.idx beside X.tfrecord) and the manifest (size, record count,
// finished). A local shard with neither is counted (or, for
// GlobalShuffle, indexed) by reading its length headers, and the count
// kept (see CountsName). Tars are kind "wds",
// indexed, checked against the manifest when one lists them.
//
// The caller closes the dataset. Its type assertions are source.Indexed
// or source.Streaming; shard datasets also have CacheStats() (the cache's
// counters, nil without one) and Remote() (source.Remote).
func Open(ctx context.Context, path string, opts OpenOptions) (source.Dataset, error) {
	if opts.Split == "" {
		opts.Split = "train"
	}
	if len(opts.Paths) > 0 {
		all := append([]string{path}, opts.Paths...)
		for _, p := range all {
			if storage.IsURL(p) {
				return nil, fmt.Errorf("%s: a URL cannot be one of several paths; give its directory alone", p)
			}
		}
		files, err := expandPaths(all)
		if err != nil {
			return nil, err
		}
		return openFiles(ctx, files, opts)
	}
	if storage.IsURL(path) {
		fs, files, err := remoteShards(ctx, path, opts.Split, opts.Manifest)
		if err != nil {
			return nil, err
		}
		var sfs shardFS = fs
		if opts.CacheDir != "" {
			cf, err := newCachedFiles(ctx, fs, opts.CacheDir, opts.CacheSize)
			if err != nil {
				fs.close()
				return nil, err
			}
			sfs = cf
		}
		return openShards(ctx, sfs, files, opts)
	}
	if source.IsLMDB(path) {
		return openLMDB(path)
	}
	if isGlob(path) {
		files, err := expandPaths([]string{path})
		if err != nil {
			return nil, err
		}
		return openFiles(ctx, files, opts)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return openFiles(ctx, []string{path}, opts)
	}
	// A split packed as tasks is read once merged (its manifest lists it
	// then), never as the shards the finished tasks left.
	if err := mergedSplits(path, []string{opts.Split}); err != nil {
		return nil, err
	}
	if ds, ok, err := openLayout(ctx, path, opts); ok {
		return ds, err // split folders (raw tars beside them are no data), CIFAR, IDX
	}
	files, err := dirShards(path, opts.Split)
	if err != nil {
		return nil, err
	}
	if files != nil {
		return openFiles(ctx, files, opts)
	}
	if err := plainFolderSplit(path, opts.Split); err != nil {
		return nil, err
	}
	return openFolder(path)
}

// dirShards returns the shard files of split in a directory: those its
// manifest lists; else, of its files told by their bytes (or names: see
// DataFiles), those named <split>-NNNNN-of-NNNNN (see Open), all N of
// them, else every one; nil if there are none (an ImageFolder tree). A
// packed directory is read through its manifest (its splits), never by
// listing.
func dirShards(dir, split string) ([]string, error) {
	m, err := LoadManifest(dir)
	if err != nil {
		return nil, err // an unreadable manifest is an error, never "no manifest"
	}
	if len(m.Splits) > 0 {
		sp := m.Splits[split]
		if sp == nil {
			return nil, fmt.Errorf("%s: manifest has no split %q", dir, split)
		}
		if !sp.Complete {
			return nil, fmt.Errorf("%s: split %q: this pack did not finish: rerun faster pack", dir, split)
		}
		var files []string
		for _, s := range sp.Shards {
			files = append(files, filepath.Join(dir, s.Name))
		}
		return files, nil
	}
	all, err := DataFiles(dir) // TFRecord, tar and gzip files, by their bytes
	if err != nil || len(all) == 0 {
		return nil, err
	}
	bySplit := bySplitName(all)
	unnamed := bySplit[""]
	delete(bySplit, "")
	if len(bySplit) == 0 {
		return unnamed, nil
	}
	files, err := pickSplit(bySplit, split, dir)
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	if err := checkComplete(dir, split, files); err != nil {
		return nil, err
	}
	return files, nil
}

// EvalSplit returns the evaluation split of a local directory of shards
// without a manifest whose names carry their splits (TensorFlow's
// train-00000-of-01024 and validation-00000-of-00128) or of split folders
// (torchvision's ImageNet layout: root/train, root/val), or CIFAR's or
// MNIST's files ("test"): "validation",
// "val" or "test", the first there is; "" when there is none, or for a
// packed directory (its manifest names its splits) or any other path.
func EvalSplit(dir string) string {
	if _, err := os.Lstat(filepath.Join(dir, ManifestName)); err == nil {
		return ""
	}
	if d, _ := source.FindCIFAR(dir); d != "" {
		return "test"
	}
	if d, _ := source.FindIDX(dir); d != "" {
		return "test"
	}
	if base, _ := kaggleBase(dir); splitFolders(base) != nil {
		subs := splitFolders(base)
		for _, s := range []string{"validation", "val", "test"} {
			if slices.Contains(subs, s) {
				return s // torchvision's ImageNet layout: root/val
			}
		}
		return ""
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	have := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			have[splitOf(e.Name())] = true
		}
	}
	for _, s := range []string{"validation", "val", "test"} {
		if have[s] {
			return s
		}
	}
	return ""
}

// pickSplit returns the files of split (or of its alias) from files by
// split, or an error naming the splits there are.
func pickSplit(bySplit map[string][]string, split, where string) ([]string, error) {
	for _, s := range append([]string{split}, splitAliases[split]...) {
		if f := bySplit[s]; len(f) > 0 {
			return f, nil
		}
	}
	var have []string
	for s := range bySplit {
		have = append(have, s)
	}
	slices.Sort(have)
	return nil, fmt.Errorf("%s: no shards of split %q (the shards here are of split %s)", where, split, strings.Join(have, ", "))
}

// openLMDB opens a Caffe LMDB, read by key.
func openLMDB(path string) (source.Dataset, error) {
	db, err := source.OpenLMDB(path)
	if err != nil {
		return nil, err
	}
	if db.Len() == 0 {
		db.Close()
		return nil, fmt.Errorf("%s: empty LMDB", path)
	}
	return db, nil
}

// openWDS opens WebDataset tar shards, read sample by sample (ReadAt).
// Shards that disagree with the manifest beside them, and regions of the
// tars that could not be listed, are Open's error, or go to the skip
// policy one by one.
//
// An index beside a tar that disagrees with it (a member that is not
// where its line says: DALI's wds2idx gets GNU long-name and PAX tars
// wrong) is named, file and line: Open's error, or one Skip call, after
// which the tar is read by scanning it.
func openWDS(files []string, o OpenOptions) (source.Dataset, error) {
	w, err := source.OpenWDSWith(files, source.WDSOptions{Unlabeled: o.Unlabeled})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (source.Dataset, error) {
		w.Close()
		return nil, err
	}
	of := max(w.Len(), 1)
	for _, f := range w.IndexFaults() {
		if o.Skip == nil {
			return fail(&source.CorruptError{Path: f.Path, Offset: f.Offset, Reason: f.Reason + " (with --on-error skip the index is listed and the tar scanned; or delete the index)"})
		}
		f.Reason += "; the tar was scanned instead"
		if err := o.Skip(f, of); err != nil {
			return fail(err)
		}
	}
	errs, err := checkWDSManifest(files, w)
	if err != nil {
		if o.Skip == nil || !source.IsDamage(err) {
			return fail(err)
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		if o.Skip == nil {
			return fail(errors.Join(errs...))
		}
		for _, e := range errs {
			if err := o.Skip(source.DamageOf(e, files[0], 0, ""), of); err != nil {
				return fail(err)
			}
		}
	}
	for _, d := range w.Damage() {
		if o.Skip == nil {
			return fail(&source.CorruptError{Path: d.Path, Offset: d.Offset, Reason: d.Reason})
		}
		if err := o.Skip(d, of); err != nil {
			return fail(err)
		}
	}
	if w.Len() == 0 {
		return fail(fmt.Errorf("%s: no webdataset samples", files[0]))
	}
	return w, nil
}

// checkWDSManifest checks the tars a manifest beside them lists: finished,
// with the manifest's size and sample count. It returns every shard that
// disagrees (damage, one error each), or the error that stops the check
// (a shard the manifest marks unfinished, a file that cannot be read).
func checkWDSManifest(files []string, w *source.WDS) (damage []error, _ error) {
	m, err := LoadManifest(filepath.Dir(files[0]))
	if err != nil {
		return nil, err
	}
	infos := map[string]*ShardInfo{}
	for _, sp := range m.Splits {
		for i := range sp.Shards {
			infos[sp.Shards[i].Name] = &sp.Shards[i]
		}
	}
	damaged := map[string]bool{} // its losses are reported as damage
	for _, d := range w.Damage() {
		damaged[d.Path] = true
	}
	samples := map[string]int64{}
	for i := range w.Len() {
		p, _ := w.Where(i)
		samples[p]++
	}
	for _, f := range files {
		info := infos[filepath.Base(f)]
		if info == nil {
			continue
		}
		st, err := os.Stat(f)
		switch {
		case err != nil:
			return damage, err
		case !info.Complete:
			return damage, fmt.Errorf("%s: the manifest marks this shard unfinished: this pack did not finish: rerun faster pack", f)
		case st.Size() != info.Bytes:
			damage = append(damage, &source.CorruptError{Path: f, Offset: min(st.Size(), info.Bytes), Reason: fmt.Sprintf("%d bytes, the manifest records %d: the shard was cut short or rewritten after packing (rerun faster pack)", st.Size(), info.Bytes)})
		case samples[f] != info.Records && !damaged[f]:
			damage = append(damage, &source.CorruptError{Path: f, Offset: -1, Reason: fmt.Sprintf("%d samples, the manifest records %d (a stale index or a rewritten shard)", samples[f], info.Records)})
		}
	}
	return damage, nil
}

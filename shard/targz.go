package shard

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/faster-training/faster/source"
)

// openTarGz opens gzip-compressed files: WebDataset tars (.tar.gz, .tgz,
// whatever their names), read in order as webdataset reads them (a
// streaming dataset: gzip has no random access). A gzip file that holds
// no tar is refused, naming gzip. The sample counts are learned by
// reading the files through when several ranks need them, and kept in the
// counts file beside them (CountsName) for the next open.
func openTarGz(ctx context.Context, files []string, o OpenOptions) (source.Dataset, error) {
	for _, f := range files {
		if err := gzipHoldsTar(f); err != nil {
			return nil, err
		}
	}
	if o.GlobalShuffle {
		return nil, fmt.Errorf("%s: a gzip-compressed tar is read in order (gzip has no random access), so it cannot be shuffled globally; drop --global-shuffle (files are shuffled, then samples within a buffer), or decompress the shards (gunzip) for random access", files[0])
	}
	t, err := source.OpenTarGz(files, source.TarGzOptions{WDSOptions: source.WDSOptions{Unlabeled: o.Unlabeled}, Skip: o.Skip != nil})
	if err != nil {
		return nil, err
	}
	if o.Ranks > 1 {
		if err := countTarGz(ctx, t); err != nil {
			return nil, fmt.Errorf("counting the samples of gzip-compressed tars for %d ranks: %w", o.Ranks, err)
		}
	}
	return t, nil
}

// countTarGz learns the sample counts of gzip-compressed tars: from the
// counts file beside them (CountsName) while a file's entry holds, else
// by reading it through, and keeps them there. A count from the counts
// file is checked as the file is read (source.TarGz.SetKeptCount).
func countTarGz(ctx context.Context, t *source.TarGz) error {
	c := newCounter()
	defer c.save()
	for i, f := range t.Files() {
		n, from, ok, err := c.kept(f, 0)
		if err != nil {
			return err
		}
		if ok {
			t.SetKeptCount(i, n, func(got string) error {
				c.drop(f)
				return wrongCount(from, f, n, got)
			})
			continue
		}
		st, stamp, err := statStamp(f)
		if err != nil {
			return err
		}
		if n, err = t.CountFile(ctx, i); err != nil {
			return err
		}
		c.keep(f, st, stamp, n)
	}
	return nil
}

// gzipHoldsTar checks that the gzip file at path decompresses to a tar:
// anything else is refused, naming gzip (never read as a TFRecord).
func gzipHoldsTar(path string) error {
	f, _, err := source.OpenFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return &source.CorruptError{Path: path, Offset: 0, Reason: "gzip: " + err.Error(), Err: err}
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(zr, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
		return &source.CorruptError{Path: path, Offset: 0, Reason: "gzip: " + err.Error(), Err: err}
	}
	if !isTarHead(head[:n]) {
		return fmt.Errorf("%s: gzip-compressed (its first bytes are 1f 8b), and what it holds is no tar: only gzip-compressed tars (.tar.gz, .tgz: WebDataset shards) are read compressed; decompress it (gunzip) first", path)
	}
	return nil
}

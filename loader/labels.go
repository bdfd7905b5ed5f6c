package loader

import (
	"fmt"

	"github.com/faster-training/faster/source"
)

// MaxLabelOffset bounds Options.LabelOffset either way: a container
// stores labels up to source.MaxLabel, so a larger shift leaves no label in
// range, and the shifted class names would take memory for nothing.
const MaxLabelOffset = source.MaxLabel

// initLabels applies the label options once the source is open: the class
// names shift with LabelOffset (an offset of -1 drops the name of stored
// label 0, which no sample then has; +1 adds an unnamed class 0), and
// classes becomes Options.Classes or the number of names.
func (l *Loader) initLabels() error {
	o := l.opts
	if o.LabelOffset < -MaxLabelOffset || o.LabelOffset > MaxLabelOffset {
		return fmt.Errorf("label offset %d: at most %d either way (the largest label a container stores)", o.LabelOffset, MaxLabelOffset)
	}
	if o.LabelOffset != 0 && l.kind == "imagefolder" {
		return fmt.Errorf("label offset %d: an ImageFolder's labels are its class folders' indices, not stored labels", o.LabelOffset)
	}
	switch off := o.LabelOffset; {
	case off < 0 && len(l.labels) > 0:
		l.labels = l.labels[min(-off, len(l.labels)):]
	case off > 0 && len(l.labels) > 0:
		l.labels = append(make([]string, off), l.labels...)
	}
	l.classes = o.Classes
	if l.classes == 0 {
		l.classes = len(l.labels)
	}
	return nil
}

// label applies the offset to s's label and checks its range: a label out
// of range is a damaged sample, named by its file and offset. The range is
// [0, classes) where the classes are known (the manifest's, the class
// folders', Options.Classes); shards without a manifest do not record
// theirs, and without Options.Classes only negative labels are refused.
// A stored label equal to the number of classes, with the offset 0 and no
// stored 0 seen so far, is what 1-based labels (TensorFlow's ImageNet
// shards) look like: the error says to read them with offset -1.
func (l *Loader) label(s *Sample) error {
	stored := s.Label
	if stored == 0 && !l.zeroSeen.Load() {
		l.zeroSeen.Store(true)
	}
	s.Label += l.opts.LabelOffset
	if s.Label >= 0 && (l.classes == 0 || s.Label < l.classes) {
		return nil
	}
	why := fmt.Sprintf("label %d", stored)
	if l.opts.LabelOffset != 0 {
		why += fmt.Sprintf(" (%d after label offset %d)", s.Label, l.opts.LabelOffset)
	}
	if s.synset != "" {
		why += " of synset " + s.synset
	}
	if l.classes > 0 {
		why += fmt.Sprintf(" is outside the %d classes [0, %d)", l.classes, l.classes)
	} else {
		why += " is negative"
	}
	if l.opts.LabelOffset == 0 && l.classes > 0 && stored == l.classes && !l.zeroSeen.Load() {
		// Labels 1..N with no 0: counted from 1, as TensorFlow's ImageNet
		// shards count them (their 0 is a background class).
		why += fmt.Sprintf("; the labels seem to count from 1 (label %d of %d classes, and no label 0 seen), as TensorFlow's ImageNet shards do: read them with --label-offset -1 (faster.Loader(label_offset=-1), Options.LabelOffset)", stored, l.classes)
	}
	return &source.CorruptError{Path: s.path, Offset: s.off, Key: s.Key, Reason: why}
}

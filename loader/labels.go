package loader

import (
	"fmt"

	"github.com/faster-training/faster/source"
)

// initLabels applies the label options once the source is open: the class
// names shift with LabelOffset (an offset of -1 drops the name of stored
// label 0, which no sample then has; +1 adds an unnamed class 0), and
// classes becomes Options.Classes or the number of names.
func (l *Loader) initLabels() error {
	o := l.opts
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
// of range is a damaged sample, named by its file and offset.
func (l *Loader) label(s *Sample) error {
	stored := s.Label
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
	return &source.CorruptError{Path: s.path, Offset: s.off, Key: s.Key, Reason: why}
}

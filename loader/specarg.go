package loader

import (
	"io"
	"os"
	"strings"
)

// ReadSpecArg reads a Spec over base (ReadSpec) from arg as a command line
// gives it: a file, - for stdin (nil: os.Stdin), or the JSON itself (an
// argument starting with {). name is what arg stands for in a message:
// the file, "(stdin)" or "(inline JSON)"; it is "" with the error of a
// file that cannot be opened.
func ReadSpecArg(arg string, stdin io.Reader, base Spec) (s Spec, name string, err error) {
	name, r := arg, io.Reader(nil)
	switch {
	case strings.HasPrefix(strings.TrimSpace(arg), "{"):
		name, r = "(inline JSON)", strings.NewReader(arg)
	case arg == "-":
		name, r = "(stdin)", stdin
		if r == nil {
			r = os.Stdin
		}
	default:
		f, err := os.Open(arg)
		if err != nil {
			return base, "", err
		}
		defer f.Close()
		r = f
	}
	s, err = ReadSpec(r, base)
	if err != nil {
		return base, name, err
	}
	return s, name, nil
}

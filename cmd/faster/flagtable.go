package main

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/loader"
)

// readSpecArg reads --spec's argument over base: a file, - for stdin, or
// the JSON itself (an argument starting with {). A problem is a usage
// error naming --spec and the file.
func readSpecArg(arg string, stdin io.Reader, base loader.Spec) (loader.Spec, error) {
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
			return base, usagef("--spec: %v", err)
		}
		defer f.Close()
		r = f
	}
	s, err := loader.ReadSpec(r, base)
	if err != nil {
		return base, usagef("--spec %s: %v", name, err)
	}
	return s, nil
}

// specUsage makes a Spec's problems a usage error, each named by its
// field (the spec's own words).
func specUsage(err error) error {
	var se *loader.SpecError
	if errors.As(err, &se) {
		lines := make([]string, len(se.Problems))
		for i, p := range se.Problems {
			lines[i] = "--spec: " + p.Error()
		}
		return usagef("%s", strings.Join(lines, "\n"))
	}
	return err
}

// loaderFlagsGiven lists the loader flags given on f (those a --spec
// replaces), as --name.
func loaderFlagsGiven(f *pflag.FlagSet) []string {
	if f == nil {
		return nil
	}
	var lf loaderFlags
	var bf badDataFlags
	names := pflag.NewFlagSet("", pflag.ContinueOnError)
	lf.register(names, "")
	bf.registerBad(names)
	var given []string
	names.VisitAll(func(fl *pflag.Flag) {
		if f.Changed(fl.Name) {
			given = append(given, "--"+fl.Name)
		}
	})
	return given
}

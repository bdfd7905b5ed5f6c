package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/loader"
)

// parseLoaderFlags parses args as `faster serve` / `faster bench load`
// would and returns the loader options they describe (or the usage error).
func parseLoaderFlags(t *testing.T, args ...string) (loader.Options, error) {
	t.Helper()
	var lf loaderFlags
	f := pflag.NewFlagSet("test", pflag.ContinueOnError)
	lf.register(f, "train or eval")
	if err := f.Parse(args); err != nil {
		return loader.Options{}, err
	}
	if err := lf.check(); err != nil {
		return loader.Options{}, err
	}
	return lf.options(1), nil
}

// epochDigest is the SHA-256 of an epoch's keys, labels and pixels.
func epochDigest(t *testing.T, root string, o loader.Options, epoch int) string {
	t.Helper()
	l, err := loader.Open(root, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h := sha256.New()
	for b, err := range l.IterEpoch(context.Background(), epoch) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Valid {
			h.Write([]byte(b.Items[i].Key))
			h.Write([]byte{byte(b.Items[i].Label)})
			h.Write(b.Row(i))
		}
		b.Release()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// flagDigest returns the digest of an epoch of root under the loader flags
// base plus args.
func flagDigest(t *testing.T, root string, base ...string) func(epoch int, args ...string) string {
	return func(epoch int, args ...string) string {
		o, err := parseLoaderFlags(t, append(append([]string{}, base...), args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return epochDigest(t, root, o, epoch)
	}
}

// TestAugmentRecipeEqualsFlags: each named recipe gives the batches its
// documented flags give, bit for bit; the augmentations change the pixels
// (not the order); the epoch is decided by (seed, epoch, sample).
func TestAugmentRecipeEqualsFlags(t *testing.T) {
	digest := flagDigest(t, writeFolder(t, 2, 5), "--batch", "4", "--resolution", "24", "--seed", "7")
	plain := digest(0)
	for _, c := range []struct{ recipe, flags string }{
		{"torchvision", ""},
		{"torchvision-ta-wide", "--auto-augment ta-wide --augment-interpolation bilinear"},
		{"torchvision-ra", "--auto-augment ra --ra-n 2 --ra-m 9 --augment-interpolation bilinear"},
		{"torchvision-aa", "--auto-augment imagenet --augment-interpolation bilinear"},
		{"torchvision-augmix", "--auto-augment augmix --augmix-severity 3 --augment-interpolation bilinear"},
		{"torchvision-v2", "--auto-augment ta-wide --augment-interpolation bilinear --erasing-prob 0.1"},
	} {
		byName := digest(0, "--augment-recipe", c.recipe)
		byFlags := digest(0, strings.Fields(c.flags)...)
		if byName != byFlags {
			t.Errorf("--augment-recipe %s: batches differ from %s", c.recipe, c.flags)
		}
		if (byName == plain) != (c.recipe == "torchvision") {
			t.Errorf("--augment-recipe %s: same pixels as the plain recipe: %v", c.recipe, byName == plain)
		}
	}
	// A flag given explicitly overrides the recipe's value.
	if a, b := digest(0, "--augment-recipe", "torchvision-v2", "--erasing-prob", "0"), digest(0, "--augment-recipe", "torchvision-ta-wide"); a != b {
		t.Error("--augment-recipe torchvision-v2 --erasing-prob 0 differs from torchvision-ta-wide")
	}
	// Erasing on every sample: the recipe's value 0 is a Compose's value=0 ("0.0").
	if a, b := digest(0, "--augment-recipe", "torchvision-v2", "--erasing-prob", "1"),
		digest(0, "--auto-augment", "ta-wide", "--augment-interpolation", "bilinear", "--erasing-prob", "1", "--erasing-value", "0.0"); a != b {
		t.Error("--erasing-prob 1: the recipe's value 0 differs from --erasing-value 0.0")
	}
	// Every op at once, epoch 1: a fresh loader gives the same epoch.
	all := []string{"--auto-augment", "ra", "--ra-n", "3", "--ra-m", "12", "--color-jitter", "0.4,0.4,0.4,0.1",
		"--grayscale-prob", "0.3", "--erasing-prob", "0.5", "--erasing-value", "random", "--augment-fill", "128"}
	if digest(1, all...) != digest(1, all...) || digest(1, all...) == digest(0, all...) {
		t.Error("epoch 1 with every op: not decided by (seed, epoch, sample)")
	}
	// The v2 recipe's eval: Resize(232) + CenterCrop(224).
	if o, err := parseLoaderFlags(t, "--transform", "eval", "--augment-recipe", "torchvision-v2"); err != nil || o.Resize != 232 || o.Resolution != 224 {
		t.Errorf("torchvision-v2 eval: resize %d at %d (%v), want 232 at 224", o.Resize, o.Resolution, err)
	}
	if o, _ := parseLoaderFlags(t, "--transform", "eval", "--augment-recipe", "torchvision-v2", "--resize", "256"); o.Resize != 256 {
		t.Errorf("--resize 256 did not override the recipe's: %d", o.Resize)
	}
}

// TestAugmentFlagsValidation: each bad value is a usage error naming its
// flag, from the CLI.
func TestAugmentFlagsValidation(t *testing.T) {
	root := writeFolder(t, 1, 2)
	for _, c := range []struct{ args, flag string }{
		{"--augment-recipe torchvision-foo", "--augment-recipe"},
		{"--auto-augment cifar10", "--auto-augment"},
		{"--auto-augment ra --ra-n 0", "--ra-n"},
		{"--auto-augment ra --ra-m 31", "--ra-m"},
		{"--magnitude-bins 1", "--magnitude-bins"},
		{"--augmix-severity 11", "--augmix-severity"},
		{"--augment-interpolation lanczos", "--augment-interpolation"},
		{"--auto-augment augmix --augment-interpolation bicubic", "--augment-interpolation"},
		{"--augment-fill 1,2", "--augment-fill"},
		{"--augment-fill 300", "--augment-fill"},
		{"--color-jitter 0.4,0.4", "--color-jitter"},
		{"--color-jitter 0.4,0.4,0.4,0.6", "--color-jitter"},
		{"--color-jitter 1,0.5,1,1,1,1,0,0", "--color-jitter"},
		{"--grayscale-prob 1.5", "--grayscale-prob"},
		{"--erasing-prob -0.1", "--erasing-prob"},
		{"--erasing-prob 0.5 --erasing-scale 0.5,0.1", "--erasing-scale"},
		{"--erasing-prob 0.5 --erasing-ratio 0,3", "--erasing-ratio"},
		{"--erasing-prob 0.5 --erasing-value 1,2", "--erasing-value"},
		{"--erasing-prob 0.5 --layout u8-hwc", "--erasing-prob"},
		{"--transform eval --auto-augment ta-wide", "--auto-augment"},
		{"--rotate-degrees -5", "--rotate-degrees"},
		{"--rotate-degrees 30,10", "--rotate-degrees"},
		{"--affine-degrees 1,2,3", "--affine-degrees"},
		{"--affine-degrees 0 --affine-translate 0.1", "--affine-translate"},
		{"--affine-degrees 0 --affine-translate 1.5,0", "--affine-translate"},
		{"--affine-degrees 0 --affine-scale 0,1", "--affine-scale"},
		{"--affine-degrees 0 --affine-shear 1,2,3", "--affine-shear"},
		{"--affine-degrees 0 --affine-shear 95", "--affine-shear"},
		{"--affine-scale 0.9,1.1", "--affine-degrees"},
		{"--blur-kernel 4", "--blur-kernel"},
		{"--blur-kernel 3,5,7", "--blur-kernel"},
		{"--blur-sigma 1", "--blur-kernel"},
		{"--blur-kernel 3 --blur-sigma 2,1", "--blur-sigma"},
		{"--blur-kernel 3 --blur-sigma 0", "--blur-sigma"},
		{"--transform eval --rotate-degrees 10", "--rotate-degrees"},
	} {
		args := append([]string{"bench", "load", root, "--batch", "1", "--resolution", "8", "--steps", "1"}, strings.Fields(c.args)...)
		code, _, errs := runCLI(t, args...)
		if code != 2 || !strings.Contains(errs, c.flag) {
			t.Errorf("%s: exit %d, stderr %q; want a usage error naming %s", c.args, code, errs, c.flag)
		}
	}
}

// TestTrainAugmentRecipe: `faster train` takes the same flags: the v2
// recipe trains end to end; a bad value is a usage error naming its flag.
func TestTrainAugmentRecipe(t *testing.T) {
	tree, test := writeFolder(t, 2, 4), writeFolder(t, 2, 2)
	args := []string{"train", "--data", tree, "--test-data", test, "--model", "thinnet", "--filters", "4,8",
		"--resolution", "16", "--batch", "4", "--epochs", "1", "--threads", "1"}
	if code, _, errs := runCLI(t, append(args, "--augment-recipe", "torchvision-v2", "--color-jitter", "0.2,0.2,0.2,0")...); code != 0 {
		t.Fatalf("--augment-recipe torchvision-v2: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, append(args, "--auto-augment", "ta")...); code != 2 || !strings.Contains(errs, "--auto-augment") {
		t.Errorf("--auto-augment ta: exit %d: %s", code, errs)
	}
}

// TestGeometryAndBlurFlags: RandomAffine, RandomRotation and GaussianBlur
// from their flags: torchvision's meanings of the arguments (D is -D..D,
// shear S is x in -S..S, fill 0 through the mask unless --augment-fill;
// nearest on a PIL image, as the reference runs them before ToTensor),
// in the documented order after the policy (affine, rotation, jitter,
// grayscale, blur); each changes the pixels, and the epoch is decided by
// (seed, epoch, sample).
func TestGeometryAndBlurFlags(t *testing.T) {
	o, err := parseLoaderFlags(t, "--auto-augment", "ta-wide", "--affine-degrees", "10", "--affine-translate", "0.1,0.2",
		"--affine-scale", "0.9,1.1", "--affine-shear", "5", "--rotate-degrees", "-20,30", "--grayscale-prob", "0.2",
		"--blur-kernel", "5,3", "--blur-sigma", "0.5,1.5")
	if err != nil {
		t.Fatal(err)
	}
	seq, ok := o.Augment.(augment.Sequence)
	if !ok || len(seq) != 5 {
		t.Fatalf("Augment = %#v, want a sequence of 5 ops", o.Augment)
	}
	if _, ok := seq[0].(*augment.TrivialAugmentWide); !ok {
		t.Errorf("op 0 is %T, want the policy", seq[0])
	}
	a, ok := seq[1].(*augment.RandomAffine)
	if !ok || a.Degrees != [2]float64{-10, 10} || *a.Translate != [2]float64{0.1, 0.2} || *a.Scale != [2]float64{0.9, 1.1} ||
		*a.Shear != [4]float64{-5, 5, 0, 0} || a.ShearY || a.Interp != augment.WarpNearestPIL || len(a.Fill) != 3 || a.Fill[0] != 0 {
		t.Errorf("op 1: %#v, want RandomAffine(10, translate (0.1, 0.2), scale (0.9, 1.1), shear 5, fill 0)", seq[1])
	}
	if r, ok := seq[2].(*augment.RandomRotation); !ok || r.Degrees != [2]float64{-20, 30} {
		t.Errorf("op 2: %#v, want RandomRotation((-20, 30))", seq[2])
	}
	if g, ok := seq[3].(augment.RandomGrayscale); !ok || g.P != 0.2 {
		t.Errorf("op 3: %#v, want RandomGrayscale(0.2)", seq[3])
	}
	if b, ok := seq[4].(*augment.GaussianBlurOp); !ok || b.KernelW != 5 || b.KernelH != 3 || b.Sigma != [2]float64{0.5, 1.5} {
		t.Errorf("op 4: %#v, want GaussianBlur((5, 3), (0.5, 1.5))", seq[4])
	}
	if o, _ := parseLoaderFlags(t, "--affine-degrees", "0", "--affine-shear", "1,2,3,4", "--augment-fill", "7"); true {
		a := o.Augment.(*augment.RandomAffine)
		if *a.Shear != [4]float64{1, 2, 3, 4} || !a.ShearY || a.Fill[0] != 7 {
			t.Errorf("--affine-shear 1,2,3,4 --augment-fill 7: %#v", a)
		}
	}
	if o, _ := parseLoaderFlags(t, "--blur-kernel", "3"); o.Augment.(*augment.GaussianBlurOp).Sigma != [2]float64{0.1, 2} {
		t.Errorf("--blur-kernel 3: sigma %v, want torchvision's default (0.1, 2.0)", o.Augment.(*augment.GaussianBlurOp).Sigma)
	}

	digest := flagDigest(t, writeFolder(t, 2, 4), "--batch", "4", "--resolution", "24", "--seed", "3")
	plain := digest(0)
	for _, flags := range []string{"--rotate-degrees 30", "--affine-degrees 0 --affine-translate 0.2,0.2 --affine-scale 0.8,0.9",
		"--blur-kernel 5 --blur-sigma 1,2"} {
		f := strings.Fields(flags)
		if digest(0, f...) == plain {
			t.Errorf("%s: the same pixels as without it", flags)
		}
		if digest(1, f...) != digest(1, f...) || digest(1, f...) == digest(0, f...) {
			t.Errorf("%s: epoch 1 not decided by (seed, epoch, sample)", flags)
		}
	}
}

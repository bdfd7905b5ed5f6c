// Package shardtest writes datasets as other tools write them, for the
// tests of the packages that read them: never through this project's own
// writers.
package shardtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// TFImageNet describes TFRecord shards as TensorFlow's
// build_imagenet_data.py writes them (see tfimagenet.py): Shards files
// "<Split>-%05d-of-%05d" + Ext of PerShard records each, record k (of all
// shards) labelled 1 + k%Classes (TensorFlow's labels count from 1), with
// image/filename "n%08d_<k>.JPEG" of its class and an 8×8 PNG.
type TFImageNet struct {
	Split     string // "train"
	Shards    int    // 2
	PerShard  int    // 4
	Classes   int    // 3
	ZeroBased bool   // labels from 0 (as faster pack writes them), not 1
	Ext       string // "" (the script's names)
	// Index writes DALI tfrecord2idx indexes: "" none, "stem" as X.idx
	// beside X<Ext>, "full" as X<Ext>.idx.
	Index string
}

// WriteTFImageNet writes the shards into dir with an independent writer,
// a pure-Python one run by /usr/bin/python3 (struct, zlib and a CRC-32C of
// its own). Without python3 the test is skipped, or fails under
// FASTER_REQUIRE_DATA=1.
func WriteTFImageNet(t testing.TB, dir string, o TFImageNet) {
	t.Helper()
	py := testenv.Python
	if _, err := os.Stat(py); err != nil {
		testenv.Missing(t, "%s missing", py)
	}
	_, self, _, _ := runtime.Caller(0)
	args := []string{filepath.Join(filepath.Dir(self), "tfimagenet.py"), dir}
	set := func(flag string, v, def int) {
		if v == 0 {
			v = def
		}
		args = append(args, flag, strconv.Itoa(v))
	}
	split := o.Split
	if split == "" {
		split = "train"
	}
	args = append(args, "--split", split)
	set("--shards", o.Shards, 2)
	set("--per-shard", o.PerShard, 4)
	set("--classes", o.Classes, 3)
	base := "1"
	if o.ZeroBased {
		base = "0"
	}
	args = append(args, "--label-base", base, "--ext", o.Ext)
	if o.Index != "" {
		args = append(args, "--index", o.Index)
	}
	if out, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("tfimagenet.py %v: %v\n%s", args[1:], err, out)
	}
}

// Name is the file name of shard i of n of split as build_imagenet_data.py
// writes it: "train-00003-of-01024".
func Name(split string, i, n int) string { return fmt.Sprintf("%s-%05d-of-%05d", split, i, n) }

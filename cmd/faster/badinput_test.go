package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfrecord"

	"github.com/faster-training/faster/internal/testenv"
)

// badRow is one row of docs/badinput.md: the outcome of each command.
type badRow struct {
	id, input                             string
	pack, verify, inspect, load, loadSkip string
}

// otherCommandsHeading starts docs/badinput.md's table of other commands
// (TestBadInputOtherTable's), after the table of the data commands.
const otherCommandsHeading = "## Other commands"

// readBadInputTable parses the table of docs/badinput.md.
func readBadInputTable(t *testing.T) []badRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/badinput.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []badRow
	for _, line := range strings.Split(string(b), "\n") {
		if line == otherCommandsHeading {
			break // readOtherTable's
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| id ") {
			continue
		}
		c := strings.Split(strings.Trim(line, "|"), "|")
		for i := range c {
			c[i] = strings.TrimSpace(c[i])
		}
		if len(c) != 7 {
			t.Fatalf("docs/badinput.md: row %q has %d cells, want 7", line, len(c))
		}
		rows = append(rows, badRow{c[0], c[1], c[2], c[3], c[4], c[5], c[6]})
	}
	if len(rows) == 0 {
		t.Fatal("docs/badinput.md: no table rows")
	}
	return rows
}

// badFixture is a row's input: data for the commands, the name their
// messages must mention, and bench load flags of the row.
type badFixture struct {
	data       string
	needle     string
	loadArgs   []string
	quarantine string // --quarantine for the skip run; default a file in a temp dir
	packDst    string // pack's destination; default a new folder
}

// badImage adds a bad file to a good ImageFolder.
func badImage(name string, mk func(t *testing.T, p string)) func(t *testing.T) badFixture {
	return func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 3)
		mk(t, filepath.Join(root, "c0", name))
		return badFixture{data: root, needle: name}
	}
}

// badShards packs a good folder (format tfrecord or wds) and damages it.
func badShards(format string, damage func(t *testing.T, dir string) string) func(t *testing.T) badFixture {
	return func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 3)
		dir := filepath.Join(t.TempDir(), "shards")
		if code, _, errs := runCLI(t, "pack", root, dir, "--shards", "2", "--format", format); code != 0 {
			t.Fatalf("pack: %s", errs)
		}
		return badFixture{data: dir, needle: damage(t, dir)}
	}
}

func editManifest(t *testing.T, dir string, edit func(m map[string]any)) string {
	mp := filepath.Join(dir, shard.ManifestName)
	b, _ := os.ReadFile(mp)
	var m map[string]any
	json.Unmarshal(b, &m)
	edit(m)
	b, _ = json.Marshal(m)
	os.WriteFile(mp, b, 0o644)
	return shard.ManifestName
}

func trainSplit(m map[string]any) map[string]any {
	return m["splits"].(map[string]any)["train"].(map[string]any)
}

func firstIndex(t *testing.T, dir string) (shardPath string, entries []tfrecord.IndexEntry) {
	shardPath = filepath.Join(dir, shard.Name("train", 0, 2))
	f, err := os.Open(shard.IndexName(shardPath))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err = tfrecord.ReadIndex(f, "")
	if err != nil || len(entries) < 2 {
		t.Fatalf("index: %v", err)
	}
	return shardPath, entries
}

var badFixtures = map[string]func(t *testing.T) badFixture{
	"fifo-image": badImage("pipe.JPEG", func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
	}),
	"dangling-image": badImage("dangling.JPEG", func(t *testing.T, p string) { os.Symlink(p+".missing", p) }),
	"loop-image":     badImage("loop.JPEG", func(t *testing.T, p string) { os.Symlink(filepath.Base(p), p) }),
	"zero-image":     badImage("zero.JPEG", func(t *testing.T, p string) { os.Symlink("/dev/zero", p) }),
	"sparse-image": badImage("sparse.JPEG", func(t *testing.T, p string) {
		os.WriteFile(p, nil, 0o644)
		if err := os.Truncate(p, source.MaxFileSize+1); err != nil {
			t.Fatal(err)
		}
	}),
	"text-image": badImage("text.JPEG", func(t *testing.T, p string) { os.WriteFile(p, []byte("not an image"), 0o644) }),
	"huge-pixels": badImage("huge.JPEG", func(t *testing.T, p string) {
		var b bytes.Buffer
		jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 16, 16)), nil)
		d := b.Bytes()
		i := bytes.Index(d, []byte{0xff, 0xc0})
		d[i+5], d[i+6], d[i+7], d[i+8] = 30000>>8, 30000&0xff, 30000>>8, 30000&0xff
		os.WriteFile(p, d, 0o644)
	}),
	"dir-named-jpeg": badImage("dir.JPEG", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }),
	"wds-huge-label": func(t *testing.T) badFixture {
		dir := t.TempDir()
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, m := range [][2]string{{"a.png", "\x89PNG\r\n\x1a\nxx"}, {"a.cls", "2000000000"}, {"b.png", "\x89PNG\r\n\x1a\nyy"}, {"b.cls", "1"}} {
			tw.WriteHeader(&tar.Header{Name: m[0], Mode: 0o644, Size: int64(len(m[1])), Typeflag: tar.TypeReg})
			tw.Write([]byte(m[1]))
		}
		tw.Close()
		p := filepath.Join(dir, "s.tar")
		os.WriteFile(p, b.Bytes(), 0o644)
		return badFixture{data: p, needle: "s.tar", loadArgs: []string{"--transform", "none"}}
	},
	"lmdb-fifo": func(t *testing.T) badFixture {
		if _, err := source.OpenLMDB(t.TempDir()); errors.Is(err, source.ErrNoCgo) {
			t.Skip("CGO_ENABLED=0: no LMDB reader")
		}
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, "data.mdb"), 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
		return badFixture{data: dir, needle: "data.mdb"}
	},
	"lmdb-truncated": func(t *testing.T) badFixture {
		if _, err := source.OpenLMDB(t.TempDir()); errors.Is(err, source.ErrNoCgo) {
			t.Skip("CGO_ENABLED=0: no LMDB reader")
		}
		// Written by py-lmdb (another writer than ours), then cut short.
		dir := filepath.Join(t.TempDir(), "db")
		script := "import lmdb, sys\nenv = lmdb.open(sys.argv[1], map_size=1 << 26)\n" +
			"with env.begin(write=True) as txn:\n    for i in range(40):\n        txn.put(b'%08d_x%d.jpg' % (i, i), bytes(3000))\nenv.close()\n"
		if out, err := exec.Command(testenv.Python, "-c", script, dir).CombinedOutput(); err != nil {
			testenv.Missing(t, "py-lmdb (python3-lmdb): %v: %s", err, out)
		}
		if err := os.Truncate(filepath.Join(dir, "data.mdb"), 40000); err != nil {
			t.Fatal(err)
		}
		return badFixture{data: dir, needle: "truncated"}
	},
	"png16-bomb": badImage("bomb.png", func(t *testing.T, p string) {
		// A 16-bit RGBA PNG's header for 10000x10000 (under the pixel
		// limit; 800 MB of working image): refused by its decode memory.
		var b bytes.Buffer
		b.WriteString("\x89PNG\r\n\x1a\n")
		ihdr := []byte("IHDR\x00\x00\x27\x10\x00\x00\x27\x10\x10\x06\x00\x00\x00")
		binary.Write(&b, binary.BigEndian, uint32(13))
		b.Write(ihdr)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr))
		b.WriteString("\x00\x00\x00\x02IDAT\x78\x9c\x00\x00\x00\x00")
		os.WriteFile(p, b.Bytes(), 0o644)
	}),
	"state-fifo": func(t *testing.T) badFixture {
		p := filepath.Join(t.TempDir(), "state.json")
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
		return badFixture{data: writeFolder(t, 2, 2), needle: "state.json", loadArgs: []string{"--resume-from", p}}
	},
	"tf-sparse-record": func(t *testing.T) badFixture {
		dir := t.TempDir()
		p := filepath.Join(dir, "z.tfrecord")
		os.WriteFile(p, nil, 0o644)
		if err := os.Truncate(p, 600<<20); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "z.idx"), []byte("0 629145600\n"), 0o644)
		return badFixture{data: p, needle: "z.tfrecord", loadArgs: []string{"--global-shuffle", "--transform", "none"}}
	},
	"fifo-shard": func(t *testing.T) badFixture {
		dir := t.TempDir()
		p := filepath.Join(dir, "x.tfrecord")
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
		return badFixture{data: dir, needle: "x.tfrecord"}
	},
	"crc-flip": badShards("tfrecord", func(t *testing.T, dir string) string {
		p, e := firstIndex(t, dir)
		b, _ := os.ReadFile(p)
		b[e[0].Offset+20] ^= 0xff
		os.WriteFile(p, b, 0o644)
		return filepath.Base(p)
	}),
	"idx-huge-size": badShards("tfrecord", func(t *testing.T, dir string) string {
		p, _ := firstIndex(t, dir)
		os.WriteFile(shard.IndexName(p), []byte("0 4611686018427387904\n"), 0o644)
		return filepath.Base(shard.IndexName(p))
	}),
	"idx-empty": badShards("tfrecord", func(t *testing.T, dir string) string {
		p, _ := firstIndex(t, dir)
		os.WriteFile(shard.IndexName(p), nil, 0o644)
		return filepath.Base(shard.IndexName(p))
	}),
	"shard-cut": badShards("tfrecord", func(t *testing.T, dir string) string {
		p, e := firstIndex(t, dir)
		os.Truncate(p, e[len(e)-1].Offset)
		return filepath.Base(p)
	}),
	"manifest-unreadable": badShards("tfrecord", func(t *testing.T, dir string) string {
		os.WriteFile(filepath.Join(dir, shard.ManifestName), []byte("{"), 0o644)
		return shard.ManifestName
	}),
	"manifest-dup": badShards("tfrecord", func(t *testing.T, dir string) string {
		return editManifest(t, dir, func(m map[string]any) {
			sh := trainSplit(m)["shards"].([]any)
			sh[1] = sh[0]
		})
	}),
	"manifest-outside": badShards("tfrecord", func(t *testing.T, dir string) string {
		return editManifest(t, dir, func(m map[string]any) {
			trainSplit(m)["shards"].([]any)[0].(map[string]any)["name"] = "../../etc/passwd"
		})
	}),
	"manifest-count": badShards("tfrecord", func(t *testing.T, dir string) string {
		return editManifest(t, dir, func(m map[string]any) { trainSplit(m)["num_shards"] = 5 })
	}),
	"pack-unfinished": badShards("tfrecord", func(t *testing.T, dir string) string {
		editManifest(t, dir, func(m map[string]any) { trainSplit(m)["complete"] = false })
		return "rerun faster pack"
	}),
	"wds-idx-huge": badShards("wds", func(t *testing.T, dir string) string {
		ip := filepath.Join(dir, "train-00000-of-00002.idx")
		b, err := os.ReadFile(ip)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		f := strings.Fields(lines[1])
		f[2] = "4611686018427387904"
		lines[1] = strings.Join(f, " ")
		os.WriteFile(ip, []byte(strings.Join(lines, "\n")), 0o644)
		return filepath.Base(ip)
	}),
	"quarantine-dir": func(t *testing.T) badFixture {
		fx := badImage("text.JPEG", func(t *testing.T, p string) { os.WriteFile(p, []byte("not an image"), 0o644) })(t)
		fx.quarantine = t.TempDir()
		fx.needle = fx.quarantine
		return fx
	},
	"pack-inside-source": func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 2)
		return badFixture{data: root, packDst: filepath.Join(root, "shards"), needle: "inside the source"}
	},
	"pack-locked": func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 2)
		dst := t.TempDir()
		f, err := os.Create(filepath.Join(dst, shard.LockName))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Skip("flock:", err)
		}
		return badFixture{data: root, packDst: dst, needle: "another faster pack"}
	},
	"pack-running": badShards("tfrecord", func(t *testing.T, dir string) string {
		// A pack in progress: its manifest unfinished, its lock held.
		editManifest(t, dir, func(m map[string]any) { trainSplit(m)["complete"] = false })
		f, err := os.Create(filepath.Join(dir, shard.LockName))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Skip("flock:", err)
		}
		if runtime.GOOS != "linux" {
			t.Skip("lockfile.Held reads /proc/locks")
		}
		return "a faster pack is writing this destination now"
	}),
	"workers-huge": func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), loadArgs: []string{"--workers", "100000"}}
	},
	"rate-nan": func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), needle: "--consumer-rate", loadArgs: []string{"--consumer-rate", "NaN"}}
	},
	"batch-zero": func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), needle: "--batch 0", loadArgs: []string{"--batch", "0"}}
	},
	"output-dir": func(t *testing.T) badFixture {
		dir := t.TempDir()
		return badFixture{data: writeFolder(t, 2, 2), needle: dir, loadArgs: []string{"--dump-keys", dir}}
	},
	"resolution-huge": func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), needle: "--resolution 100000", loadArgs: []string{"--resolution", "100000"}}
	},
	"resolution-overflow": func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), needle: "--resolution 4294967296", loadArgs: []string{"--resolution", "4294967296"}}
	},
	"epochs-negative": func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), needle: "--epochs -1", loadArgs: []string{"--epochs", "-1"}}
	},
	"idx-bad-label": func(t *testing.T) badFixture {
		return badFixture{data: writeBadLabelIDX(t), needle: "train-labels-idx1-ubyte: offset 11"}
	},
	"label-offset-huge": func(t *testing.T) badFixture {
		return badFixture{data: writeFolder(t, 2, 2), needle: "--label-offset 4000000000", loadArgs: []string{"--label-offset", "4000000000"}}
	},
}

// writeBadLabelIDX writes an IDX dataset (writeTrainIDX's, 16 images a
// split) whose training label 3, at offset 11 of train-labels-idx1-ubyte,
// is 200: outside the 10 classes.
func writeBadLabelIDX(t *testing.T) string {
	dir := writeTrainIDX(t, 16)
	f, err := os.OpenFile(filepath.Join(dir, "train-labels-idx1-ubyte"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{200}, 8+3); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBadInputTable checks docs/badinput.md row by row: each row's input
// is built, every command with an outcome in the row is run, and the
// outcome (exit status, and a message or list naming the file) must be the
// one the table states.
func TestBadInputTable(t *testing.T) {
	rows := readBadInputTable(t)
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.id] = true
		build, ok := badFixtures[r.id]
		if !ok {
			t.Errorf("docs/badinput.md row %q has no fixture in badinput_test.go", r.id)
			continue
		}
		t.Run(r.id, func(t *testing.T) {
			fx := build(t)
			check := func(cmd, want string, code int, stdout, stderr string, listed string) {
				t.Helper()
				outcome := strings.Fields(want)[0]
				var ok bool
				switch outcome {
				case "skipped":
					ok = code == 0 && strings.Contains(stdout+listed, fx.needle) && strings.Contains(stdout, "skipped")
				case "error":
					ok = code == 1 && strings.Contains(stderr, fx.needle) && !strings.Contains(stderr, "panic")
				case "BAD":
					ok = code == 1 && strings.Contains(stdout, "BAD ") && strings.Contains(stdout, fx.needle)
				case "reported":
					ok = code == 0 && strings.Contains(stdout, fx.needle) && strings.Contains(strings.ToLower(stdout), "corrupt")
				case "usage":
					ok = code == 2 && strings.Contains(stderr, fx.needle)
				case "ok":
					ok = code == 0
				default:
					t.Fatalf("%s: outcome %q is not one of skipped, error, usage, BAD, reported, ok, —", cmd, want)
				}
				if !ok {
					t.Errorf("%s: want %s (naming %q), got exit %d\nstdout: %s\nstderr: %s", cmd, want, fx.needle, code, stdout, stderr)
				}
			}
			if r.pack != "—" {
				dst := fx.packDst
				if dst == "" {
					dst = filepath.Join(t.TempDir(), "out")
				}
				code, out, errs := runCLI(t, "pack", fx.data, dst, "--shards", "2")
				check("pack", r.pack, code, out, errs, "")
			}
			if r.verify != "—" {
				code, out, errs := runCLI(t, "verify", fx.data)
				check("verify", r.verify, code, out, errs, "")
			}
			if r.inspect != "—" {
				code, out, errs := runCLI(t, "inspect", fx.data)
				check("inspect", r.inspect, code, out, errs, "")
			}
			load := append([]string{"bench", "load", fx.data, "--batch", "2", "--resolution", "16", "--workers", "1"}, fx.loadArgs...)
			if r.load != "—" {
				code, out, errs := runCLI(t, load...)
				check("bench load", r.load, code, out, errs, "")
			}
			if r.loadSkip != "—" {
				q := fx.quarantine
				if q == "" {
					q = filepath.Join(t.TempDir(), "quarantine.jsonl")
				}
				code, out, errs := runCLI(t, append(load, "--on-error", "skip", "--quarantine", q)...)
				listed, _ := os.ReadFile(q)
				check("bench load --on-error skip", r.loadSkip, code, out, errs, string(listed))
			}
		})
	}
	for id := range badFixtures {
		if !seen[id] {
			t.Errorf("fixture %q has no row in docs/badinput.md", id)
		}
	}
}

// TestInterruptExitsWhateverTheCommandBlocksOn: after SIGINT/SIGTERM (the
// context done) a command that does not return is left behind when the
// grace period ends: exit 130, and the default signal handling is back.
func TestInterruptExitsWhateverTheCommandBlocksOn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := false
	grace := make(chan time.Time)
	blocked := make(chan struct{})
	defer close(blocked)
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runUntilInterrupted(ctx, func() { stopped = true },
			func(time.Duration) <-chan time.Time { return grace },
			func() int { <-blocked; return 0 }, &stderr)
	}()
	cancel()             // the signal
	grace <- time.Time{} // the grace period ends (runUntilInterrupted waits on it only after the signal)
	if code := <-done; code != 130 || !stopped || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("exit %d, signal handling restored %v, stderr %q", code, stopped, stderr.String())
	}
	// A command that returns is not cut short.
	code := runUntilInterrupted(context.Background(), func() {}, time.After, func() int { return 3 }, &stderr)
	if code != 3 {
		t.Fatalf("exit %d, want the command's 3", code)
	}
}

// TestCapWorkers: --workers 1000 on 2 CPUs is capped, with a warning
// (before: accepted as is).
func TestCapWorkers(t *testing.T) {
	var stderr bytes.Buffer
	if n := capWorkers(&stderr, "--workers", 1000, 2); n != 8 || !strings.Contains(stderr.String(), "--workers 1000 on 2 CPUs: using 8") {
		t.Fatalf("capped to %d, warned %q", n, stderr.String())
	}
	stderr.Reset()
	if n := capWorkers(&stderr, "--workers", 0, 2); n != 0 || stderr.Len() > 0 {
		t.Fatalf("auto changed to %d (%q)", n, stderr.String())
	}
	if n := capWorkers(&stderr, "--workers", 8, 2); n != 8 || stderr.Len() > 0 {
		t.Fatalf("a value within the cap changed to %d (%q)", n, stderr.String())
	}
	// Through the CLI: pack warns and still packs.
	root := writeFolder(t, 2, 2)
	code, _, errs := runCLI(t, "pack", root, filepath.Join(t.TempDir(), "out"), "--workers", "100000")
	if code != 0 || !strings.Contains(errs, "--workers 100000 on") {
		t.Fatalf("pack --workers 100000: exit %d, stderr %q", code, errs)
	}
}

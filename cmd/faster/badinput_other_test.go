//go:build unix

package main

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
)

// otherRow is a row of that table.
type otherRow struct{ id, input, command, outcome string }

// readOtherTable parses the table under otherCommandsHeading.
func readOtherTable(t *testing.T) []otherRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/badinput.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), otherCommandsHeading+"\n")
	if !ok {
		t.Fatalf("docs/badinput.md: no %q section", otherCommandsHeading)
	}
	var rows []otherRow
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| id ") {
			continue
		}
		c := strings.Split(strings.Trim(line, "|"), "|")
		for i := range c {
			c[i] = strings.TrimSpace(c[i])
		}
		if len(c) != 4 {
			t.Fatalf("docs/badinput.md: row %q has %d cells, want 4", line, len(c))
		}
		rows = append(rows, otherRow{c[0], c[1], c[2], c[3]})
	}
	return rows
}

// otherFixtures build a row's input: the command line and the name its
// message must mention.
var otherFixtures = map[string]func(t *testing.T) (args []string, needle string){
	"ckpt-fifo": func(t *testing.T) ([]string, string) {
		fifo := filepath.Join(t.TempDir(), "ckpt")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--filters", "4", "--checkpoint", fifo}, fifo
	},
	"ckpt-other-data": func(t *testing.T) ([]string, string) {
		dir, ckpt := writeTrainIDX(t, 16), filepath.Join(t.TempDir(), "ckpt")
		args := []string{"train", "--data", dir, "--batch", "4", "--threads", "1", "--filters", "4", "--checkpoint", ckpt, "--test-limit", "4", "--limit", "8"}
		if code, _, errs := runCLI(t, args...); code != 0 {
			t.Fatalf("training the checkpoint: %s", errs)
		}
		return append(args[:len(args)-1], "4", "--epochs", "2"), "(8 samples)"
	},
	"ckpt-locked": func(t *testing.T) ([]string, string) {
		ckpt := filepath.Join(t.TempDir(), "ckpt")
		unlock, err := train.LockCheckpoint(ckpt) // the other run
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(unlock)
		return []string{"train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--checkpoint", ckpt}, ckpt
	},
	"model-huge": func(t *testing.T) ([]string, string) {
		return []string{"train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--filters", "20000", "--max-memory", "1G"}, "--max-memory"
	},
	"step-epochs-tiny": func(t *testing.T) ([]string, string) {
		return []string{"train", "--data", writeTrainIDX(t, 8), "--batch", "2", "--threads", "1", "--filters", "4", "--step-epochs", "1e-300"}, "--step-epochs 1e-300"
	},
	"idx-bad-label-train": func(t *testing.T) ([]string, string) {
		return []string{"train", "--data", writeBadLabelIDX(t), "--batch", "4", "--threads", "1", "--filters", "4"}, "train-labels-idx1-ubyte: offset 11"
	},
	"idx-bad-label-train-skip": func(t *testing.T) ([]string, string) {
		q := filepath.Join(t.TempDir(), "quarantine.jsonl")
		return []string{"train", "--data", writeBadLabelIDX(t), "--batch", "4", "--threads", "1", "--filters", "4", "--on-error", "skip", "--quarantine", q},
			`"offset":11,"key":"train/00003.png"`
	},
	"name-255": func(t *testing.T) ([]string, string) {
		src := writeFolder(t, 1, 1)
		ents, _ := os.ReadDir(filepath.Join(src, "c0"))
		long := filepath.Join(src, "c0", strings.Repeat("n", 246)+".jpg")
		if err := os.Rename(filepath.Join(src, "c0", ents[0].Name()), long); err != nil {
			t.Fatal(err)
		}
		return []string{"resize", "--src", src, "--dst", t.TempDir(), "--max-size", "16"}, ""
	},
	"socket-exists": func(t *testing.T) ([]string, string) {
		sock := filepath.Join(t.TempDir(), "notes.txt")
		os.WriteFile(sock, []byte("keep"), 0o644)
		return []string{"serve", writeFolder(t, 2, 2), "--socket", sock}, sock
	},
	"train-resolution-huge": func(t *testing.T) ([]string, string) {
		return []string{"train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--resolution", "4294967296"}, "--resolution 4294967296"
	},
	"train-epochs-negative": func(t *testing.T) ([]string, string) {
		return []string{"train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--epochs", "-1"}, "--epochs -1"
	},
	"ckpt-missing-dir": func(t *testing.T) ([]string, string) {
		ckpt := filepath.Join(t.TempDir(), "missing", "ckpt")
		return []string{"train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--filters", "4", "--checkpoint", ckpt}, "--checkpoint " + ckpt
	},
	"collective-timeout-env": func(t *testing.T) ([]string, string) {
		if !slices.Contains(collective.Libraries(), "gloo") {
			t.Skip("no gloo library (CGO_ENABLED=0)")
		}
		// Rank 1 of 2, the store's port closed: the rendezvous fails after
		// the timeout, which its message names.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		for k, v := range map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
			"MASTER_PORT": strconv.Itoa(port), "FASTER_COLLECTIVE_TIMEOUT": "300ms"} {
			t.Setenv(k, v)
		}
		return []string{"train", "--data", writeTrainIDX(t, 16), "--batch", "4", "--threads", "1", "--strategy", "ddp"}, "within 300ms"
	},
	"socket-long": func(t *testing.T) ([]string, string) {
		return []string{"serve", writeFolder(t, 2, 2), "--socket", filepath.Join(t.TempDir(), strings.Repeat("s", 120))}, "--socket"
	},
}

// TestBadInputOtherTable checks docs/badinput.md's table of other commands:
// each row that names a command is run and its outcome checked; a row of a
// library names the tests that check it, which must exist.
func TestBadInputOtherTable(t *testing.T) {
	rows := readOtherTable(t)
	if len(rows) == 0 {
		t.Fatal("docs/badinput.md: no rows of other commands")
	}
	seen := map[string]bool{}
	testName := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	for _, r := range rows {
		seen[r.id] = true
		build, ok := otherFixtures[r.id]
		if !ok {
			names := testName.FindAllStringSubmatch(r.outcome, -1)
			if len(names) == 0 {
				t.Errorf("row %q has neither a fixture in badinput_other_test.go nor a test named in its outcome", r.id)
			}
			for _, n := range names {
				if !testExists(t, n[1]) {
					t.Errorf("row %q names %s, which no _test.go file defines", r.id, n[1])
				}
			}
			continue
		}
		t.Run(r.id, func(t *testing.T) {
			args, needle := build(t)
			if args[0] != r.command && strings.Join(args[:min(2, len(args))], " ") != r.command { // "train", "bench load"
				t.Fatalf("the fixture runs %q, the row says %q", args[0], r.command)
			}
			code, out, errs := runCLI(t, args...)
			var ok bool
			switch r.outcome {
			case "ok":
				ok = code == 0
			case "error":
				ok = code == 1 && strings.Contains(errs, needle) && !strings.Contains(errs, "panic")
			case "usage":
				ok = code == 2 && strings.Contains(errs, needle)
			case "skipped": // exit 0, counted, and listed in the --quarantine file
				listed := ""
				if i := slices.Index(args, "--quarantine"); i >= 0 && i+1 < len(args) {
					b, _ := os.ReadFile(args[i+1])
					listed = string(b)
				}
				ok = code == 0 && strings.Contains(errs, "skipped") && strings.Contains(listed, needle)
			default:
				t.Fatalf("outcome %q is not one of ok, error, usage, skipped", r.outcome)
			}
			if !ok {
				t.Errorf("%s: want %s (naming %q), got exit %d\nstdout: %s\nstderr: %s", r.command, r.outcome, needle, code, out, errs)
			}
		})
	}
	for id := range otherFixtures {
		if !seen[id] {
			t.Errorf("fixture %q has no row in docs/badinput.md", id)
		}
	}
}

// testExists reports whether a _test.go file of the module defines name.
func testExists(t *testing.T, name string) bool {
	t.Helper()
	found := false
	filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipDir
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && p != "../..") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "func "+name+"(") {
				found = true
			}
		}
		return nil
	})
	return found
}

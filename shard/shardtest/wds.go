package shardtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// WDSSample is a WebDataset sample as a test writes it: its key (a path
// without extension) and its members in order, each an extension as
// written ("JPG", "cls") and its bytes.
type WDSSample struct {
	Key     string
	Members []WDSMember
}

// WDSMember is one file of a sample.
type WDSMember struct {
	Ext  string
	Data []byte
}

// WriteTree writes the samples' members as files key.ext under dir and
// returns their names (relative to dir), in order: the input of the tar
// writers below.
func WriteTree(t testing.TB, dir string, samples []WDSSample) []string {
	t.Helper()
	var names []string
	for _, s := range samples {
		for _, m := range s.Members {
			name := s.Key + "." + m.Ext
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, m.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
	}
	return names
}

// need returns the path of a tool, or skips the test (fails it under
// FASTER_REQUIRE_DATA=1) when it is missing.
func need(t testing.TB, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		testenv.Missing(t, "%s missing", tool)
	}
	return p
}

// GNUTar writes the files names (relative to dir, in order) into the tar
// out with GNU tar in format ("gnu", "pax", "ustar", "v7"; long names
// make GNU long-name headers in gnu and PAX records in pax).
func GNUTar(t testing.TB, format, dir, out string, names []string) {
	t.Helper()
	tar := need(t, "tar")
	if v, _ := exec.Command(tar, "--version").Output(); !bytes.Contains(v, []byte("GNU tar")) {
		testenv.Missing(t, "%s is not GNU tar", tar)
	}
	args := append([]string{"--format=" + format, "--owner=0", "--group=0", "--mtime=@1700000000", "-cf", out, "-C", dir, "--no-recursion", "--"}, names...)
	if b, err := exec.Command(tar, args...).CombinedOutput(); err != nil {
		t.Fatalf("tar %v: %v\n%s", args, err, b)
	}
}

// PyTar writes the files names (relative to dir, in order) into out with
// Python's tarfile in format ("pax", "gnu", "ustar"), as webdataset's
// TarWriter does; out ending in .gz or .tgz is gzip-compressed by Python's
// gzip.
func PyTar(t testing.TB, format, dir, out string, names []string) {
	t.Helper()
	runPy(t, "wdswrite.py", append([]string{format, dir, out}, names...)...)
}

func runPy(t testing.TB, script string, args ...string) []byte {
	t.Helper()
	py := testenv.Python
	if _, err := os.Stat(py); err != nil {
		testenv.Missing(t, "%s missing", py)
	}
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command(py, append([]string{filepath.Join(filepath.Dir(self), script)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, stderr.Bytes())
	}
	return out
}

// RefSample is a sample of a tar as Python's tarfile reads it and
// webdataset's rules group it (see wdsref.py).
type RefSample struct {
	Key    string   `json:"key"`
	Exts   []string `json:"exts"`
	Label  *int     `json:"label"`
	Image  *string  `json:"image"` // sha256 hex of the image member
	Offset int64    `json:"offset"`
	// Data is each member's data offset and size.
	Data [][2]int64 `json:"data"`
}

// WDSRef returns the samples of the tar (or .tar.gz) at path as Python's
// tarfile and webdataset's rules see them.
func WDSRef(t testing.TB, path string) []RefSample {
	t.Helper()
	var out []RefSample
	sc := bufio.NewScanner(bytes.NewReader(runPy(t, "wdsref.py", path)))
	for sc.Scan() {
		var s RefSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// DALI wds2idx versions whose arithmetic DALIIndex reproduces (from
// NVIDIA DALI's tools/wds2idx.py, which reads GNU tar's listings):
const (
	// WDS2IdxCurrent: a member's data offset is the next listed
	// header's block times 512, minus the member's size, rounded down to
	// 512. GNU tar lists a PAX member at its ustar header, after its PAX
	// records, so the member before it gets an offset inside those
	// records.
	WDS2IdxCurrent = "current"
	// WDS2IdxOld: a member's data offset is the block GNU tar lists it
	// at, plus one. GNU tar lists a GNU long-name member at its
	// ././@LongLink header, so the offset points into the long name.
	WDS2IdxOld = "old"
)

// DALIIndex writes to idx the wds2idx index of the tar at tarPath as
// DALI's wds2idx of version algo (WDS2IdxCurrent, WDS2IdxOld) computes it
// from GNU tar's listings, in index format version ("v1.2": ext offset
// size name per member; "v1.1": ext offset size). It returns the lines.
func DALIIndex(t testing.TB, tarPath, idx, algo, version string) []string {
	t.Helper()
	tar := need(t, "tar")
	blocks, err := exec.Command(tar, "--list", "--block-num", "--file", tarPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	verbose, err := exec.Command(tar, "--verbose", "--list", "--file", tarPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	bl := strings.Split(strings.TrimRight(string(blocks), "\n"), "\n")
	vl := strings.Split(strings.TrimRight(string(verbose), "\n"), "\n")
	blockOf := func(line string) int64 { // "block 12: name"
		n, err := strconv.ParseInt(line[len("block "):strings.IndexByte(line, ':')], 10, 64)
		if err != nil {
			t.Fatalf("tar --block-num line %q", line)
		}
		return n
	}
	type member struct {
		ext, name string
		off, size int64
	}
	var samples [][]member
	last := ""
	for i := 0; i < len(bl) && i < len(vl); i++ {
		if !strings.HasPrefix(vl[i], "-") {
			continue // not a regular file
		}
		name := bl[i][strings.IndexByte(bl[i], ':')+2:]
		f := strings.Fields(vl[i]) // perms owner/group size date time name
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("tar --verbose line %q", vl[i])
		}
		var off int64
		switch algo {
		case WDS2IdxCurrent:
			off = blockOf(bl[i+1])*512 - size
			off -= off % 512
		case WDS2IdxOld:
			off = (blockOf(bl[i]) + 1) * 512
		default:
			t.Fatalf("algo %q", algo)
		}
		slash := strings.LastIndexByte(name, '/') + 1
		dot := strings.IndexByte(name[slash:], '.')
		if dot < 0 {
			continue
		}
		key, ext := name[:slash+dot], name[slash+dot+1:]
		if key == "" || strings.HasSuffix(key, "/") {
			continue
		}
		if len(samples) == 0 || key != last {
			samples = append(samples, nil)
			last = key
		}
		samples[len(samples)-1] = append(samples[len(samples)-1], member{ext, name, off, size})
	}
	lines := []string{fmt.Sprintf("%s %d", version, len(samples))}
	for _, s := range samples {
		var parts []string
		for _, m := range s {
			p := fmt.Sprintf("%s %d %d", m.ext, m.off, m.size)
			if version == "v1.2" {
				p += " " + m.name
			}
			parts = append(parts, p)
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	if err := os.WriteFile(idx, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return lines
}

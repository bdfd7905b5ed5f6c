package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/faster-training/faster/internal/atomicfile"
)

// Cache keeps kernels compiled by NVRTC on disk, one file per key: the
// device's architecture, NVRTC's version and the hash of the source and
// options. A compile takes about 0.1 s a kernel source (GPU.md); a cached
// one a file read.
//
// An entry is written atomically (a temporary file renamed over the name),
// and begins with a header naming its whole key and the SHA-256 of the
// image behind it:
//
//	faster-nvrtc-cache 1\n
//	arch=sm_90 nvrtc=13.0 source=<sha256 hex> size=<bytes> image=<sha256 hex>\n
//	<image: a cubin>
//
// An entry whose header names another key (foreign: a file copied under
// another name, a name's hash truncated) or whose image does not match its
// size and sum (corrupt) is compiled again and replaced. The format must
// not change without changing the magic line.
//
// A Cache is safe for concurrent use by processes as well as goroutines:
// two that miss together both compile and the last rename wins, with the
// same bytes.
type Cache struct {
	Dir string
}

const cacheMagic = "faster-nvrtc-cache 1\n"

// CacheKey names one compiled image.
type CacheKey struct {
	Arch    string // "sm_90"
	NVRTC   string // NVRTC's version, "13.0"
	Source  string // the CUDA source
	Options []string
}

// sourceHash hashes the source and the options.
func (k CacheKey) sourceHash() string {
	h := sha256.New()
	h.Write([]byte(k.Source))
	for _, o := range k.Options {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (k CacheKey) validate() error {
	for _, s := range []string{k.Arch, k.NVRTC} {
		if s == "" || strings.ContainsAny(s, " /\n\x00") {
			return fmt.Errorf("cuda: cache key %q: arch and NVRTC version must be non-empty words", s)
		}
	}
	return nil
}

// header is the entry's second line, without image's sum and size.
func (k CacheKey) header() string {
	return fmt.Sprintf("arch=%s nvrtc=%s source=%s", k.Arch, k.NVRTC, k.sourceHash())
}

// Path is where the entry of k lives.
func (c *Cache) Path(k CacheKey) string {
	return filepath.Join(c.Dir, fmt.Sprintf("%s-nvrtc%s-%s.cubin", k.Arch, k.NVRTC, k.sourceHash()[:24]))
}

// Compiler compiles k's source for k's architecture (NVRTC, or a fake in
// tests).
type Compiler func(k CacheKey) ([]byte, error)

// Outcome says how Load found an image.
type Outcome struct {
	Hit bool
	// Recompiled says why an existing entry was not used: "" (none was
	// there, or it was a hit), else "corrupt: …" or "foreign: …".
	Recompiled string
	// WriteErr is why the compiled image could not be stored (the image
	// is returned all the same).
	WriteErr error
}

// errCorrupt and errForeign classify a bad entry.
var (
	errCorrupt = errors.New("corrupt")
	errForeign = errors.New("foreign")
)

// Load returns the image of k, from the cache when its entry is there and
// intact, else from compile, which it then stores.
func (c *Cache) Load(k CacheKey, compile Compiler) ([]byte, Outcome, error) {
	if err := k.validate(); err != nil {
		return nil, Outcome{}, err
	}
	var out Outcome
	path := c.Path(k)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		img, err := parseEntry(data, k)
		if err == nil {
			return img, Outcome{Hit: true}, nil
		}
		out.Recompiled = err.Error()
	case !errors.Is(err, os.ErrNotExist):
		out.Recompiled = "unreadable: " + err.Error()
	}
	img, err := compile(k)
	if err != nil {
		return nil, out, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		out.WriteErr = err
		return img, out, nil
	}
	out.WriteErr = atomicfile.WriteFile(path, entry(k, img), 0o644)
	return img, out, nil
}

// entry is the file of image img under key k.
func entry(k CacheKey, img []byte) []byte {
	sum := sha256.Sum256(img)
	var b bytes.Buffer
	b.WriteString(cacheMagic)
	fmt.Fprintf(&b, "%s size=%d image=%s\n", k.header(), len(img), hex.EncodeToString(sum[:]))
	b.Write(img)
	return b.Bytes()
}

// parseEntry returns the image of an entry for k, or why it cannot be used.
func parseEntry(data []byte, k CacheKey) ([]byte, error) {
	rest, ok := bytes.CutPrefix(data, []byte(cacheMagic))
	if !ok {
		return nil, fmt.Errorf("%w: no magic line", errCorrupt)
	}
	line, img, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return nil, fmt.Errorf("%w: no header", errCorrupt)
	}
	var arch, nvrtc, source, sum string
	var size int
	if n, err := fmt.Sscanf(string(line), "arch=%s nvrtc=%s source=%s size=%d image=%s", &arch, &nvrtc, &source, &size, &sum); n != 5 || err != nil {
		return nil, fmt.Errorf("%w: header %q", errCorrupt, line)
	}
	if got := fmt.Sprintf("arch=%s nvrtc=%s source=%s", arch, nvrtc, source); got != k.header() {
		return nil, fmt.Errorf("%w: entry for %s, want %s", errForeign, got, k.header())
	}
	h := sha256.Sum256(img)
	if size != len(img) || sum != hex.EncodeToString(h[:]) {
		return nil, fmt.Errorf("%w: image of %d bytes, header says %d; sum %.12s…, header says %.12s…", errCorrupt, len(img), size, hex.EncodeToString(h[:]), sum)
	}
	return img, nil
}

package cuda

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeCompiler counts compiles and makes an image naming its key.
type fakeCompiler struct {
	mu    sync.Mutex
	calls int
	fail  error
}

func (f *fakeCompiler) compile(k CacheKey) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	return []byte("CUBIN " + k.header()), nil
}

func key(src string) CacheKey {
	return CacheKey{Arch: "sm_90", NVRTC: "13.0", Source: src, Options: nvrtcOptions}
}

func TestCacheHitAndMiss(t *testing.T) {
	c := &Cache{Dir: filepath.Join(t.TempDir(), "nvrtc")} // made on first store
	f := &fakeCompiler{}
	img, out, err := c.Load(key("a"), f.compile)
	if err != nil || out.Hit || out.WriteErr != nil || f.calls != 1 {
		t.Fatalf("first load: %v %+v, %d compiles", err, out, f.calls)
	}
	img2, out, err := c.Load(key("a"), f.compile)
	if err != nil || !out.Hit || f.calls != 1 || !bytes.Equal(img, img2) {
		t.Fatalf("second load: %v %+v, %d compiles", err, out, f.calls)
	}
	// Each part of the key makes another entry.
	for _, k := range []CacheKey{key("b"), {Arch: "sm_80", NVRTC: "13.0", Source: "a", Options: nvrtcOptions},
		{Arch: "sm_90", NVRTC: "12.8", Source: "a", Options: nvrtcOptions}, {Arch: "sm_90", NVRTC: "13.0", Source: "a"}} {
		before := f.calls
		if _, out, err := c.Load(k, f.compile); err != nil || out.Hit || f.calls != before+1 {
			t.Errorf("%+v: %v %+v: a hit", k, err, out)
		}
	}
	ents, _ := os.ReadDir(c.Dir)
	if len(ents) != 5 {
		t.Errorf("%d entries, want 5", len(ents))
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

func TestCacheBadEntries(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	f := &fakeCompiler{}
	k := key("src")
	good, _, err := c.Load(k, f.compile)
	if err != nil {
		t.Fatal(err)
	}
	path := c.Path(k)
	whole, _ := os.ReadFile(path)
	other := entry(key("other"), []byte("CUBIN other"))
	for _, tc := range []struct {
		name, why string
		data      []byte
	}{
		{"truncated", "corrupt", whole[:len(whole)-3]},
		{"a flipped byte", "corrupt", append(bytes.Clone(whole[:len(whole)-1]), whole[len(whole)-1]^1)},
		{"no magic", "corrupt", []byte("ELF...")},
		{"empty", "corrupt", nil},
		{"no header end", "corrupt", []byte(cacheMagic + "arch=sm_90")},
		{"bad header", "corrupt", []byte(cacheMagic + "hello\nworld")},
		{"another key's entry", "foreign", other},
	} {
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		before := f.calls
		img, out, err := c.Load(k, f.compile)
		if err != nil || out.Hit || !strings.HasPrefix(out.Recompiled, tc.why+":") || f.calls != before+1 || !bytes.Equal(img, good) {
			t.Errorf("%s: %v %+v, %d compiles", tc.name, err, out, f.calls-before)
		}
		// Replaced: the next load hits.
		if _, out, _ := c.Load(k, f.compile); !out.Hit {
			t.Errorf("%s: not replaced (%+v)", tc.name, out)
		}
	}
}

func TestCacheErrors(t *testing.T) {
	dir := t.TempDir()
	f := &fakeCompiler{fail: errors.New("nvrtc: syntax error")}
	c := &Cache{Dir: dir}
	if _, _, err := c.Load(key("x"), f.compile); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("compile failure: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed compile left %d files", len(ents))
	}
	// A cache that cannot be written still gives the image.
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	c = &Cache{Dir: filepath.Join(file, "sub")}
	img, out, err := c.Load(key("x"), (&fakeCompiler{}).compile)
	if err != nil || img == nil || out.WriteErr == nil {
		t.Errorf("unwritable cache: %v %+v", err, out)
	}
	for _, k := range []CacheKey{{NVRTC: "13.0"}, {Arch: "sm_90"}, {Arch: "../x", NVRTC: "1"}, {Arch: "sm 90", NVRTC: "1"}} {
		if _, _, err := c.Load(k, f.compile); err == nil {
			t.Errorf("key %+v accepted", k)
		}
	}
}

// Goroutines missing together all get the image; the entry is whole.
func TestCacheConcurrent(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	f := &fakeCompiler{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if img, _, err := c.Load(key("k"), f.compile); err != nil || len(img) == 0 {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, out, err := c.Load(key("k"), f.compile); err != nil || !out.Hit {
		t.Errorf("after the race: %v %+v", err, out)
	}
}

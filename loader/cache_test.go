package loader

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/faster-training/faster/storage/s3test"
)

// countingProxy sits between the loader and the S3 test server and counts
// the requests and response bytes that reach the server.
type countingProxy struct {
	srv         *httptest.Server
	reqs, bytes atomic.Int64
	mu          sync.Mutex
	paths       []string // requested since reset
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func newCountingProxy(t testing.TB, endpoint string) *countingProxy {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target) // keeps the Host the request was signed for
	rp.ModifyResponse = func(r *http.Response) error {
		r.Body = countingBody{r.Body, &p.bytes}
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.reqs.Add(1)
		p.mu.Lock()
		p.paths = append(p.paths, r.Method+" "+r.URL.Path)
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *countingProxy) reset() {
	p.reqs.Store(0)
	p.bytes.Store(0)
	p.mu.Lock()
	p.paths = nil
	p.mu.Unlock()
}

// shardRequests returns the requests since reset other than for the
// manifest (which a run always reads from the source: it is what the cache
// is checked against).
func (p *countingProxy) shardRequests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, q := range p.paths {
		if !strings.HasSuffix(q, "/manifest.json") {
			out = append(out, q)
		}
	}
	return out
}

// cachedS3 serves shards from the S3 test server behind a counting proxy
// and returns the proxied s3:// URL.
func cachedS3(t testing.TB, shards, prefix string) (string, *countingProxy) {
	_, srv := s3Shards(t, shards, prefix)
	p := newCountingProxy(t, srv.Endpoint())
	return "s3://" + s3test.Bucket + "/" + prefix + "?endpoint=" + p.srv.URL, p
}

// cacheData returns the cache's data files and their total size.
func cacheData(t testing.TB, dir string) (names []string, total int64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".meta") || strings.HasSuffix(n, ".lock") {
			continue
		}
		fi, _ := e.Info()
		names = append(names, n)
		total += fi.Size()
	}
	return names, total
}

func sameEpoch(a, b epoch) bool {
	return slices.Equal(a.keys, b.keys) && slices.EqualFunc(a.rows, b.rows, bytes.Equal)
}

// With a cache directory, epoch 1 (and a new loader on the same directory,
// another process or run) reads nothing from the server, and the samples
// are those of the local shards, streaming and with global shuffle.
func TestShardsS3CacheEpoch2Local(t *testing.T) {
	_, shards := makeTree(t, 6)
	url, proxy := cachedS3(t, shards, "cache-epoch2")
	for _, global := range []bool{false, true} {
		o := Options{Transform: Train, Resolution: 16, Batch: 4, Seed: 5, Layout: U8HWC, GlobalShuffle: global, Workers: 2}
		local, err := Open(shards, o)
		if err != nil {
			t.Fatal(err)
		}
		want := []epoch{runEpoch(t, local, 0), runEpoch(t, local, 1)}
		local.Close()
		o.CacheDir = t.TempDir()
		for run := range 2 { // run 1: a new loader over the cache run 0 filled
			// Open checks every shard's size and index against the
			// manifest: that is where run 0 fills the cache, so the
			// count starts before it.
			proxy.reset()
			remote, err := Open(url, o)
			if err != nil {
				t.Fatal(err)
			}
			for e := range 2 {
				if e > 0 {
					proxy.reset()
				}
				got := runEpoch(t, remote, e)
				if !sameEpoch(got, want[e]) {
					t.Fatalf("global=%v run %d epoch %d: cached S3 samples differ from local (%d vs %d keys)", global, run, e, len(got.keys), len(want[e].keys))
				}
				if e > 0 && (proxy.reqs.Load() != 0 || proxy.bytes.Load() != 0) {
					t.Fatalf("global=%v run %d epoch %d: %d requests, %d bytes to the server; want none", global, run, e, proxy.reqs.Load(), proxy.bytes.Load())
				}
				if run > 0 && e == 0 {
					if q := proxy.shardRequests(); len(q) != 0 {
						t.Fatalf("global=%v run %d: opening and epoch 0 asked the server for %q; want the manifest only", global, run, q)
					}
				}
				if run == 0 && e == 0 && proxy.bytes.Load() == 0 {
					t.Fatalf("global=%v: opening and the first epoch read nothing from the server (the test proves nothing)", global)
				}
			}
			st := remote.CacheStats()
			if run == 1 && (st.Fetches.Load() != 0 || st.Hits.Load() == 0) {
				t.Fatalf("global=%v run 1: %d fetches, %d hits", global, st.Fetches.Load(), st.Hits.Load())
			}
			remote.Close()
		}
	}
}

// A truncated, a corrupted (same size) and a half-written (no metadata)
// cache entry are each noticed and fetched again; the samples are right.
func TestShardsS3CacheDamagedRefetched(t *testing.T) {
	_, shards := makeTree(t, 6)
	url, proxy := cachedS3(t, shards, "cache-damaged")
	o := Options{Transform: Eval, Resolution: 16, Batch: 4, Shuffle: ShuffleOff, Layout: U8HWC, CacheDir: t.TempDir()}
	local, err := Open(shards, o)
	if err != nil {
		t.Fatal(err)
	}
	want := runEpoch(t, local, 0)
	local.Close()
	fill, err := Open(url, o)
	if err != nil {
		t.Fatal(err)
	}
	runEpoch(t, fill, 0)
	fill.Close()
	names, _ := cacheData(t, o.CacheDir)
	var tf []string
	for _, n := range names {
		if strings.HasSuffix(n, ".tfrecord") {
			tf = append(tf, filepath.Join(o.CacheDir, n))
		}
	}
	if len(tf) < 3 {
		t.Fatalf("cache holds %d shards (%v), want at least 3", len(tf), names)
	}
	var damaged int64
	for _, p := range tf[:3] {
		fi, _ := os.Stat(p)
		damaged += fi.Size()
	}
	if err := os.Truncate(tf[0], 100); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(tf[1])
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(tf[1], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tf[2] + ".meta"); err != nil {
		t.Fatal(err)
	}
	proxy.reset() // Open checks the shards: the refetches start there
	remote, err := Open(url, o)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	got := runEpoch(t, remote, 0)
	if !sameEpoch(got, want) {
		t.Fatalf("after damage: samples differ from local (%d vs %d keys)", len(got.keys), len(want.keys))
	}
	st := remote.CacheStats()
	if st.Refetches.Load() != 3 || st.Fetches.Load() != 3 {
		t.Fatalf("%d refetches, %d fetches; want 3 and 3", st.Refetches.Load(), st.Fetches.Load())
	}
	if proxy.bytes.Load() < damaged {
		t.Fatalf("%d bytes fetched again, want at least the %d of the damaged shards", proxy.bytes.Load(), damaged)
	}
	// Fixed: the next epoch is local again.
	proxy.reset()
	runEpoch(t, remote, 1)
	if proxy.reqs.Load() != 0 {
		t.Fatalf("%d requests after the refetch", proxy.reqs.Load())
	}
}

// Under a cap smaller than the dataset the cache evicts whole shards and
// never holds more than the cap; the samples are right.
func TestShardsS3CacheEvictionUnderCap(t *testing.T) {
	_, shards := makeTreeShards(t, 8, 6)
	url, _ := cachedS3(t, shards, "cache-evict")
	var sizes []int64
	ents, _ := os.ReadDir(shards)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tfrecord") {
			fi, _ := e.Info()
			sizes = append(sizes, fi.Size())
		}
	}
	slices.Sort(sizes)
	cap := sizes[len(sizes)-1] + sizes[len(sizes)-2] + sizes[0]/2 // two shards fit, never three
	o := Options{Transform: Eval, Resolution: 16, Batch: 4, Shuffle: ShuffleOn, Seed: 3, Layout: U8HWC,
		Workers: 1, CacheDir: t.TempDir(), CacheSize: cap}
	local, err := Open(shards, o)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	remote, err := Open(url, o)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	for e := range 3 {
		if got, want := runEpoch(t, remote, e), runEpoch(t, local, e); !sameEpoch(got, want) {
			t.Fatalf("epoch %d under a cap: samples differ from local", e)
		}
		names, total := cacheData(t, o.CacheDir)
		if total > cap {
			t.Fatalf("epoch %d: cache holds %d bytes (%v), cap %d", e, total, names, cap)
		}
	}
	// Which shards are open together depends on the interleave's
	// goroutines: entries are evicted, or (all cached ones open) a shard is
	// read past the cache; storage's TestCacheLRU pins the order down.
	if st := remote.CacheStats(); st.Evictions.Load()+st.Passthrough.Load() == 0 {
		t.Fatalf("the cap never mattered with %d shards and room for 2 (%d fetches)", len(sizes), st.Fetches.Load())
	}
}

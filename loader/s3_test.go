package loader

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faster-training/faster/storage/s3test"

	"github.com/faster-training/faster/internal/testenv"
)

var s3srv struct {
	once sync.Once
	srv  *s3test.Server
	err  error
}

// s3Shards serves a packed dataset from a real S3 server (versitygw on
// loopback) and returns its s3:// URL and the server. It fails under
// FASTER_REQUIRE_DATA=1 when the server cannot run, else skips.
func s3Shards(t testing.TB, shards, prefix string) (string, *s3test.Server) {
	t.Helper()
	s3srv.once.Do(func() {
		s3test.SetEnv()
		srv, err := s3test.Start()
		if err == nil {
			if err = srv.CreateBucket(context.Background(), s3test.Bucket); err != nil {
				srv.Close()
			}
		}
		s3srv.srv, s3srv.err = srv, err
	})
	if s3srv.err != nil {
		testenv.Missing(t, "S3 test server unavailable: %v", s3srv.err)
	}
	ents, _ := os.ReadDir(shards)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(shards, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := s3srv.srv.Put(context.Background(), s3test.Bucket, prefix+"/"+e.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
	return s3srv.srv.RootURL(prefix), s3srv.srv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if s3srv.srv != nil {
		s3srv.srv.Close()
	}
	os.Exit(code)
}

// Shards read from S3 give the same samples and pixels as from local disk,
// streaming and with global shuffle by index.
func TestShardsOverS3(t *testing.T) {
	_, shards := makeTree(t, 6)
	url, _ := s3Shards(t, shards, "same")
	for _, global := range []bool{false, true} {
		o := Options{Transform: Eval, Resolution: 16, Batch: 4, Shuffle: ShuffleOff, Layout: U8HWC, GlobalShuffle: global}
		local, err := Open(shards, o)
		if err != nil {
			t.Fatal(err)
		}
		remote, err := Open(url, o)
		if err != nil {
			t.Fatal(err)
		}
		a, b := runEpoch(t, local, 0), runEpoch(t, remote, 0)
		if len(a.keys) != 18 || !slices.Equal(a.keys, b.keys) || !slices.EqualFunc(a.rows, b.rows, bytes.Equal) {
			t.Fatalf("global=%v: S3 served %d samples, local %d; same keys %v", global, len(b.keys), len(a.keys), slices.Equal(a.keys, b.keys))
		}
		if remote.Kind() != "shards" || len(remote.Classes()) != 3 {
			t.Fatalf("remote loader: kind %s classes %v", remote.Kind(), remote.Classes())
		}
		local.Close()
		remote.Close()
	}
}

// A restart of the S3 server during an epoch loses and duplicates no
// sample: reads retry with backoff and resume where they broke. The server
// goes down right after the loader opened (so every shard read of the
// epoch meets it down) and, with global shuffle, again in mid-epoch.
func TestShardsOverS3Restart(t *testing.T) {
	_, shards := makeTree(t, 10)
	url, srv := s3Shards(t, shards, "restart")
	for _, global := range []bool{false, true} {
		o := Options{Resolution: 16, Batch: 3, Seed: 7, GlobalShuffle: global, Workers: 1, Prefetch: 1}
		local, _ := Open(shards, o)
		want := runEpoch(t, local, 0)
		local.Close()
		remote, err := Open(url, o)
		if err != nil {
			t.Fatal(err)
		}
		var up atomic.Bool
		epochOver := make(chan struct{})
		endEpoch := sync.OnceFunc(func() { close(epochOver) })
		// restart stops the server and starts it again once the loader
		// has been turned away (a connection to the stopped server's port,
		// which the test holds meanwhile), not after a fixed pause: how
		// long the loader takes to get there depends on the machine's load,
		// and the test must not. An epoch whose remaining data was already
		// read never comes back; its end restarts the server too. It
		// returns a wait for the restart's result (any number of calls).
		restart := func() func() error {
			srv.Stop()
			up.Store(false)
			tried, err := turnAway(strings.TrimPrefix(srv.Endpoint(), "http://"))
			if err != nil {
				srv.Restart()
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				select {
				case <-tried.first:
				case <-epochOver:
				}
				tried.close()
				// Set before the restart: once Restart has the server
				// listening a read may succeed before this goroutine runs
				// again, and that batch came from a server that was up.
				up.Store(true)
				done <- srv.Restart()
			}()
			return sync.OnceValue(func() error { return <-done })
		}
		restarted := restart()
		// A test that fails mid-epoch ends the epoch too and waits for
		// the server, which the package's other S3 tests share.
		t.Cleanup(func() { endEpoch(); restarted() })
		var got []string
		n := 0
		for b, err := range remote.IterEpoch(context.Background(), 0) {
			if err != nil {
				t.Fatalf("global=%v: after %d batches: %v", global, n, err)
			}
			if n == 0 && !up.Load() {
				t.Fatalf("global=%v: a batch arrived while the server was down (the test proves nothing)", global)
			}
			for i := range b.Valid {
				got = append(got, b.Items[i].Key)
			}
			b.Release()
			if n++; n == 3 && global {
				if err := restarted(); err != nil {
					t.Fatal(err)
				}
				restarted = restart()
			}
		}
		endEpoch()
		if err := restarted(); err != nil {
			t.Fatalf("restart: %v", err)
		}
		remote.Close()
		if !slices.Equal(got, want.keys) {
			t.Fatalf("global=%v: through a restart S3 served %d samples, local %d; equal %v", global, len(got), len(want.keys), slices.Equal(got, want.keys))
		}
	}
}

// refuser holds a stopped server's port and closes every connection it
// accepts; first is closed at the first one.
type refuser struct {
	ln    net.Listener
	first chan struct{}
	done  chan struct{}
}

func turnAway(addr string) (*refuser, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &refuser{ln: ln, first: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		once := sync.OnceFunc(func() { close(r.first) })
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			once()
		}
	}()
	return r, nil
}

// close frees the port and waits for the accepting goroutine to end.
func (r *refuser) close() {
	r.ln.Close()
	<-r.done
}

// BenchmarkShardsLocalVsS3 runs train epochs over the same shards from
// local disk, from the loopback S3 server, and from the S3 server through
// a local cache (Options.CacheDir, filled by a first epoch that is not
// timed), alternating, and reports the rates and the ratios to local. It reads the shards bench/run_load.sh packs
// ($FASTER_IMAGEFOLDER-shards, default /tmp/faster-imagefolder-shards) —
// real photographs — or small generated ones when those are missing.
func BenchmarkShardsLocalVsS3(b *testing.B) {
	shards := os.Getenv("FASTER_IMAGEFOLDER")
	if shards == "" {
		shards = "/tmp/faster-imagefolder"
	}
	shards += "-shards"
	if _, err := os.Stat(filepath.Join(shards, "manifest.json")); err != nil {
		_, shards = makeTree(b, 40)
	}
	url, _ := s3Shards(b, shards, "bench")
	for _, global := range []bool{false, true} {
		b.Run(map[bool]string{false: "streaming", true: "global-shuffle"}[global], func(b *testing.B) {
			benchLocalVsS3(b, shards, url, Options{Batch: 64, Seed: 1, GlobalShuffle: global})
		})
	}
}

func benchLocalVsS3(b *testing.B, shards, url string, o Options) {
	local, err := Open(shards, o)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	remote, err := Open(url, o)
	if err != nil {
		b.Fatal(err)
	}
	defer remote.Close()
	co := o
	co.CacheDir = b.TempDir()
	cached, err := Open(url, co)
	if err != nil {
		b.Fatal(err)
	}
	defer cached.Close()
	epoch := func(l *Loader, e int) (int, time.Duration) {
		t0 := time.Now()
		n := 0
		for bt, err := range l.IterEpoch(context.Background(), e) {
			if err != nil {
				b.Fatal(err)
			}
			n += bt.Valid
			bt.Release()
		}
		return n, time.Since(t0)
	}
	epoch(cached, 1<<20) // fills the cache
	var nl, nr, nc int
	var tl, tr, tc time.Duration
	for i := 0; b.Loop(); i++ {
		n, d := epoch(local, i)
		nl, tl = nl+n, tl+d
		n, d = epoch(remote, i)
		nr, tr = nr+n, tr+d
		n, d = epoch(cached, i)
		nc, tc = nc+n, tc+d
	}
	if st := cached.CacheStats(); st.Passthrough.Load() > 0 || st.Fetches.Load() == 0 {
		b.Fatalf("cache: %d fetches, %d did not fit", st.Fetches.Load(), st.Passthrough.Load())
	}
	lr := float64(nl) / tl.Seconds()
	b.ReportMetric(lr, "local-images/s")
	b.ReportMetric(float64(nr)/tr.Seconds(), "s3-images/s")
	b.ReportMetric(float64(nc)/tc.Seconds(), "s3-cached-images/s")
	b.ReportMetric((float64(nr)/tr.Seconds())/lr, "s3/local")
	b.ReportMetric((float64(nc)/tc.Seconds())/lr, "s3-cached/local")
}

package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/storage/gcstest"
)

// backendCase starts one kind of storage serving fixtures() and returns the
// dataset root URL (or path).
type backendCase struct {
	name  string
	start func(t *testing.T) string
}

var backendCases = []backendCase{
	{"local", func(t *testing.T) string {
		dir := t.TempDir()
		writeFixtures(t, dir, fixtures())
		return dir
	}},
	{"http", func(t *testing.T) string {
		dir := t.TempDir()
		writeFixtures(t, dir+"/ds", fixtures())
		srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		t.Cleanup(srv.Close)
		return srv.URL + "/ds"
	}},
	{"s3", func(t *testing.T) string {
		return sharedS3(t).RootURL("ds")
	}},
	{"gcs", func(t *testing.T) string {
		return startGCS(t).RootURL("ds")
	}},
}

// startGCS starts a GCS emulator (fake-gcs-server, a subprocess) for t, with
// the bucket made and the fixtures uploaded under "ds/" through the store; it
// fails or skips t when that is impossible (fails under
// FASTER_REQUIRE_DATA=1). With -short, and unless FASTER_REQUIRE_DATA=1, it
// skips rather than build a server that is not cached yet.
func startGCS(t *testing.T) *gcstest.Server {
	t.Helper()
	if testing.Short() && !testenv.Required() {
		if bin, _, err := gcstest.BinaryPath(); err != nil || !fileExists(bin) {
			t.Skip("-short: the GCS test server (fake-gcs-server) is not built yet")
		}
	}
	srv, err := gcstest.Start()
	if err != nil {
		testenv.Missing(t, "GCS test server (fake-gcs-server) unavailable: %v", err)
	}
	t.Cleanup(srv.Close)
	ctx := testCtx(t)
	if err := srv.CreateBucket(ctx, gcstest.Bucket); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	if err := uploadFixtures(ctx, srv.RootURL("ds"), fixtures()); err != nil {
		t.Fatalf("upload fixtures: %v", err)
	}
	return srv
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// smallRing makes ring buffers small so that fixtures span many of them.
var smallRing = &Options{ReadAheadBuffers: 3, BufferSize: 64 << 10}

// conformance is the suite every backend passes.
var conformance = []struct {
	name string
	run  func(t *testing.T, s *Store)
}{
	{"List", testList},
	{"Stat", testStat},
	{"SequentialRead", testSequential},
	{"RangeReader", testRangeReader},
	{"ReadAt", testReadAt},
	{"Missing", testMissing},
	{"Cancel", testCancel},
	{"CloseEarly", testCloseEarly},
}

func TestConformance(t *testing.T) {
	for _, bc := range backendCases {
		t.Run(bc.name, func(t *testing.T) {
			root := bc.start(t)
			s, err := Open(testCtx(t), root, smallRing)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, s)
					checkNoFillers(t)
				})
			}
		})
	}
}

func testList(t *testing.T, s *Store) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a.bin", "dir/b.bin", "dir/sub/c.bin", "empty.bin", "z-last.txt"}},
		{"dir/", []string{"dir/b.bin", "dir/sub/c.bin"}},
		{"dir/sub/c", []string{"dir/sub/c.bin"}},
		{"nothing/", nil},
	} {
		got, err := s.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		var names []string
		for _, o := range got {
			names = append(names, o.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, names, tc.want)
		}
		sizes := map[string]int{}
		for _, f := range fixtures() {
			sizes[f.name] = len(f.data)
		}
		for _, o := range got {
			if o.Size != int64(sizes[o.Name]) {
				t.Errorf("List: %s has size %d, want %d", o.Name, o.Size, sizes[o.Name])
			}
		}
	}
}

func testStat(t *testing.T, s *Store) {
	for _, f := range fixtures() {
		info, err := s.Stat(testCtx(t), f.name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Name != f.name || info.Size != int64(len(f.data)) {
			t.Errorf("Stat(%s) = %+v, want size %d", f.name, info, len(f.data))
		}
	}
}

func testSequential(t *testing.T, s *Store) {
	ctx := testCtx(t)
	for _, f := range fixtures() {
		// ReadAll (512-byte reads and up), odd small reads, and WriteTo.
		for _, mode := range []string{"readall", "small", "writeto"} {
			r, err := s.NewReader(ctx, f.name)
			if err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
			var got []byte
			switch mode {
			case "readall":
				got, err = io.ReadAll(r)
			case "small":
				buf := make([]byte, 1000)
				for {
					n, rerr := r.Read(buf[:1+rand.IntN(len(buf))])
					got = append(got, buf[:n]...)
					if rerr != nil {
						if rerr != io.EOF {
							err = rerr
						}
						break
					}
				}
			case "writeto":
				var w bytes.Buffer
				_, err = r.WriteTo(&w)
				got = w.Bytes()
			}
			if err != nil {
				t.Fatalf("%s %s: %v", f.name, mode, err)
			}
			if !bytes.Equal(got, f.data) {
				t.Errorf("%s %s: read %d bytes differing from the %d written", f.name, mode, len(got), len(f.data))
			}
			if r.Offset() != int64(len(f.data)) {
				t.Errorf("%s: Offset %d after the end, want %d", f.name, r.Offset(), len(f.data))
			}
			if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Errorf("%s: Read after the end = %d, %v; want 0, EOF", f.name, n, err)
			}
			r.Close()
		}
	}
}

func testRangeReader(t *testing.T, s *Store) {
	ctx := testCtx(t)
	data := fixtures()[0].data
	size := int64(len(data))
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][2]int64{{0, 0}, {0, 1}, {size - 1, -1}, {size, -1}, {size, 5}, {100, 64 << 10}, {size - 10, 100}}
	for range 10 {
		off := rng.Int64N(size)
		cases = append(cases, [2]int64{off, rng.Int64N(size - off + 1)})
	}
	for _, c := range cases {
		off, n := c[0], c[1]
		r, err := s.NewRangeReader(ctx, "a.bin", off, n)
		if err != nil {
			t.Fatalf("NewRangeReader(%d, %d): %v", off, n, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("range %d+%d: %v", off, n, err)
		}
		end := size
		if n >= 0 && off+n < size {
			end = off + n
		}
		if !bytes.Equal(got, data[off:end]) {
			t.Errorf("range %d+%d: got %d bytes, want %d equal to the object's", off, n, len(got), end-off)
		}
	}
	if _, err := s.NewRangeReader(ctx, "a.bin", size+1, -1); err == nil {
		t.Error("NewRangeReader past the end: no error")
	}
}

func testReadAt(t *testing.T, s *Store) {
	ctx := testCtx(t)
	data := fixtures()[0].data
	size := int64(len(data))
	ra, err := s.OpenReaderAt(ctx, "a.bin")
	if err != nil {
		t.Fatal(err)
	}
	if ra.Size() != size {
		t.Fatalf("Size %d, want %d", ra.Size(), size)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 12 {
				off := rng.Int64N(size + 10)
				buf := make([]byte, rng.IntN(200<<10))
				n, err := ra.ReadAt(buf, off)
				want := 0
				if off < size {
					want = int(min(int64(len(buf)), size-off))
				}
				if n != want {
					t.Errorf("ReadAt(%d bytes, %d) = %d, want %d (%v)", len(buf), off, n, want, err)
					continue
				}
				if want < len(buf) && err != io.EOF || want == len(buf) && err != nil {
					t.Errorf("ReadAt(%d bytes, %d): err %v", len(buf), off, err)
				}
				if want > 0 && !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
					t.Errorf("ReadAt(%d bytes, %d): wrong bytes", len(buf), off)
				}
			}
		})
	}
	wg.Wait()
}

func testMissing(t *testing.T, s *Store) {
	ctx := testCtx(t)
	url := s.URL("dir/missing.bin")
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s of a missing object: no error", what)
		}
		if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrNotExist) {
			t.Errorf("%s: %v is not ErrNotExist", what, err)
		}
		var se *Error
		if !errors.As(err, &se) || se.URL != url || !strings.Contains(err.Error(), url) {
			t.Errorf("%s: %v does not name %s", what, err, url)
		}
	}
	_, err := s.NewReader(ctx, "dir/missing.bin")
	check("NewReader", err)
	_, err = s.NewRangeReader(ctx, "dir/missing.bin", 10, 10)
	check("NewRangeReader", err)
	_, err = s.OpenReaderAt(ctx, "dir/missing.bin")
	check("OpenReaderAt", err)
	_, err = s.Stat(ctx, "dir/missing.bin")
	check("Stat", err)
}

func testCancel(t *testing.T, s *Store) {
	ctx, cancel := context.WithCancel(testCtx(t))
	r, err := s.NewReader(ctx, "a.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 10000)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = r.Read(buf)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel: %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "offset 10000") {
		t.Errorf("error %q does not name the offset 10000", err)
	}
	if _, err2 := r.Read(buf); err2 != err {
		t.Errorf("error not sticky: %v then %v", err, err2)
	}
	r.Close()
	// A cancelled context fails every operation.
	if _, err := s.NewReader(ctx, "a.bin"); !errors.Is(err, context.Canceled) {
		t.Errorf("NewReader on a cancelled context: %v", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List on a cancelled context: %v", err)
	}
}

// testCloseEarly breaks off reads after k bytes: Close must join the
// read-ahead goroutine whatever it is doing.
func testCloseEarly(t *testing.T, s *Store) {
	ctx := testCtx(t)
	for _, k := range []int{0, 1, 64 << 10, 1 << 20} {
		r, err := s.NewReader(ctx, "a.bin")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, r, int64(k)); err != nil {
			t.Fatal(err)
		}
		r.Close()
		r.Close()
		if _, err := r.Read(make([]byte, 1)); err == nil || err == io.EOF {
			t.Errorf("Read after Close: %v", err)
		}
		checkNoFillers(t)
	}
}

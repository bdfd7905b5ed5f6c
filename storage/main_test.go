package storage

import (
	"bytes"
	"context"
	"github.com/faster-training/faster/storage/s3test"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"gocloud.dev/blob"
)

func TestMain(m *testing.M) {
	// Static credentials from the environment, as a user would set them,
	// and nothing from this machine's AWS configuration.
	s3test.SetEnv()
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Close()
	}
	os.Exit(code)
}

// fixture is one object of the conformance data set.
type fixture struct {
	name string
	data []byte
}

func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 1})
	r.Read(b)
	return b
}

// fixtures is the data set every backend serves: sizes across ring-buffer
// boundaries, nested names, an empty object.
func fixtures() []fixture {
	return []fixture{
		{"a.bin", randomBytes(1, 3<<20+17)},
		{"dir/b.bin", randomBytes(2, 100<<10)},
		{"dir/sub/c.bin", randomBytes(3, 1)},
		{"empty.bin", nil},
		{"z-last.txt", []byte("the last object\n")},
	}
}

func writeFixtures(t testing.TB, dir string, fs []fixture) {
	t.Helper()
	for _, f := range fs {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// uploadFixtures writes fs under an s3:// or gs:// root through gocloud.
func uploadFixtures(ctx context.Context, root string, fs []fixture) error {
	s, err := Open(ctx, root, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	b := s.be.(*blobBackend).b
	for _, f := range fs {
		if err := b.WriteAll(ctx, s.prefix+f.name, f.data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
			return err
		}
	}
	return nil
}

// fillGoroutines counts the read-ahead goroutines alive.
func fillGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("storage.(*Reader).fill"))
}

// checkNoFillers fails t when read-ahead goroutines outlive their Readers.
func checkNoFillers(t testing.TB) {
	t.Helper()
	// Close returns once the goroutine closed done, its last act; give it a
	// moment to leave the stack.
	n := fillGoroutines()
	for i := 0; n != 0 && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
		n = fillGoroutines()
	}
	if n != 0 {
		t.Errorf("%d read-ahead goroutines still running", n)
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

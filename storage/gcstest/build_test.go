package gcstest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// TestBuild builds (or finds cached) the fake-gcs-server binary, so that
// `make test` pays for it once, before the packages that start servers
// run in parallel.
func TestBuild(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s missing after the build: %v", bin, err)
	}
}

// TestStart starts the server, makes a bucket, uploads an object and reads
// it back through the JSON API.
func TestStart(t *testing.T) {
	srv, err := Start()
	if err != nil {
		testenv.Missing(t, "GCS test server (fake-gcs-server) unavailable: %v", err)
	}
	defer srv.Close()
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, Bucket); err != nil {
		t.Fatal(err)
	}
	want := []byte("hello, gcs\n")
	if err := srv.Put(ctx, Bucket, "dir/a b.txt", want); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.Endpoint() + "/storage/v1/b/" + Bucket + "/o/dir%2Fa%20b.txt?alt=media")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Fatalf("GET: %s %q %v, want %q", resp.Status, got, err, want)
	}
	if err := srv.Put(ctx, "no-such-bucket", "x", want); err == nil {
		t.Error("Put into a missing bucket: no error")
	}
	srv.Close()
	srv.Close() // twice is harmless
}

package storage

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestOpenRoots(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		root    string
		wantErr string // substring; "" means success
	}{
		{"s3://bucket/prefix?endpoint=http://127.0.0.1:1&use_path_style=true&disable_https=true&region=eu-west-1", ""},
		{"s3://bucket", ""},
		{"gs://bucket/p?endpoint=http://127.0.0.1:1", ""},
		{"https://user:secret@example.com/data", ""},
		{"ftp://host/x", `unsupported scheme "ftp"`},
		{"s3://bucket/p?bogus=1", `unknown query parameter "bogus"`},
		{"gs://bucket/p?endpoint=http://h&anonymous=true", "no other query parameters"},
		{"", "empty dataset root"},
	} {
		s, err := Open(ctx, tc.root, nil)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("Open(%q): %v", tc.root, err)
				continue
			}
			if strings.Contains(s.Root(), "?") || strings.Contains(s.Root(), "secret") {
				t.Errorf("Open(%q).Root() = %q leaks the query or a password", tc.root, s.Root())
			}
			s.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Open(%q) = %v, want an error with %q", tc.root, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "bogus=1") {
			t.Errorf("Open(%q): error %q repeats the query", tc.root, err)
		}
	}
	if _, err := Open(ctx, t.TempDir()+"/missing", nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing directory: %v, want fs.ErrNotExist", err)
	}
	if err := (&Options{ReadAheadBuffers: 1, BufferSize: 10}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "ReadAheadBuffers") || !strings.Contains(err.Error(), "BufferSize") {
		t.Errorf("Validate reports %v, want both problems", err)
	}
	for root, want := range map[string]bool{"s3://b": true, "gs://b/x": true, "HTTPS://h": true, "/data": false, "file:///data": false, "rel/dir": false} {
		if IsURL(root) != want {
			t.Errorf("IsURL(%q) = %v", root, !want)
		}
	}
}

// TestS3Config reaches the S3 server with the endpoint from the environment
// (no query at all), and with every endpoint parameter spelled out.
func TestS3Config(t *testing.T) {
	srv := sharedS3(t)
	ctx := testCtx(t)
	check := func(root string) {
		t.Helper()
		s, err := Open(ctx, root, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		info, err := s.Stat(ctx, "a.bin")
		if err != nil {
			t.Fatalf("%s: %v", root, err)
		}
		if info.Size != int64(len(fixtures()[0].data)) {
			t.Errorf("%s: size %d", root, info.Size)
		}
	}
	check("s3://" + vgwBucket + "/ds?endpoint=" + srv.Endpoint() + "&use_path_style=true&disable_https=true&region=us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint())
	t.Setenv("AWS_REGION", "us-east-1")
	check("s3://" + vgwBucket + "/ds")
	// Wrong credentials are a permanent error, reported at once.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	s, err := Open(ctx, "s3://"+vgwBucket+"/ds", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Stat(ctx, "a.bin"); err == nil {
		t.Error("Stat with a wrong secret: no error")
	}
}

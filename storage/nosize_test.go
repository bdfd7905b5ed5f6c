package storage

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestNoSizeNamesURL: an object served without a size (a chunked,
// endless body; no Content-Length, no Content-Range) is refused naming
// its URL and the cause, on open and on stat (before: read as 0 bytes,
// "unexpected end of JSON input" for a manifest, "-1 bytes" for a shard).
func TestNoSizeNamesURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		if r.Method == http.MethodHead {
			return
		}
		buf := []byte(strings.Repeat("x", 64<<10))
		for range 64 { // endless enough: the client stops at the header
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	s, err := Open(context.Background(), srv.URL+"/d/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{srv.URL + "/d/manifest.json", "gives no size"}
	r, err := s.NewReader(context.Background(), "manifest.json")
	if err == nil {
		_, err = io.ReadAll(r)
		r.Close()
	}
	_, serr := s.Stat(context.Background(), "manifest.json")
	for _, e := range []error{err, serr} {
		if e == nil || !strings.Contains(e.Error(), want[0]) || !strings.Contains(e.Error(), want[1]) {
			t.Errorf("got %v, want an error naming %q", e, want)
		}
	}
}

//go:build !cgo || faster_serveonly

package gloo

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/collective"
)

func TestOpenNeedsCgo(t *testing.T) {
	_, err := Open(collective.Config{Size: 1})
	if err == nil || !strings.Contains(err.Error(), "needs a cgo build") {
		t.Fatalf("Open = %v", err)
	}
	if _, err := collective.Open("gloo", collective.Config{Size: 1}); err == nil || !strings.Contains(err.Error(), "cgo") {
		t.Fatalf("collective.Open = %v", err)
	}
}

// Package gcstest runs a GCS emulator for tests: fake-gcs-server
// (BSD-2-Clause), built from the Go module proxy at the version the nested
// module internal/testservers pins (a tool dependency there, not in the
// library's go.mod), cached under os.UserCacheDir()/faster-test-bin, and
// started as a subprocess on a free loopback port with its in-memory
// backend. Clients reach it with gs://BUCKET/PREFIX?endpoint=Endpoint()
// and no credentials.
package gcstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/faster-training/faster/storage/internal/testbin"
)

// The GCS tests run against fake-gcs-server (BSD-2-Clause), built from the
// module proxy at the version internal/testservers/go.mod pins (its command
// is the module's root package).
const (
	module = "github.com/fsouza/fake-gcs-server"
	Bucket = "faster"
)

var gcsBinary = &testbin.Binary{Name: "fake-gcs-server", Module: module, Pkg: module}

// Binary builds the server once per machine: the binary is cached under
// os.UserCacheDir()/faster-test-bin, keyed by the fake-gcs-server and Go versions.
func Binary() (string, error) { return gcsBinary.Build() }

// BinaryPath returns where the binary of the pinned version is cached.
func BinaryPath() (bin, version string, err error) { return gcsBinary.Path() }

// Server is one running fake-gcs-server.
type Server struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *strings.Builder
}

// Start starts fake-gcs-server (memory backend, plain HTTP) on a free
// loopback port and waits until it answers.
func Start() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	addr, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-backend", "memory", "-scheme", "http", "-host", host, "-port", port, "-log-level", "warn")
	// No FAKE_GCS_* settings of this machine's environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	testbin.SetDeathSignal(cmd)
	s := &Server{addr: addr, cmd: cmd, exited: make(chan struct{}), logs: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("fake-gcs-server exited at start: %s", s.logs.String())
		default:
		}
		resp, err := http.Get(s.Endpoint() + "/storage/v1/b")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Close()
	return nil, errors.New("fake-gcs-server did not answer within 30s")
}

// Endpoint is the server's http:// address, the gs:// URLs' endpoint.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// RootURL is the gs:// URL of prefix in the test bucket.
func (s *Server) RootURL(prefix string) string {
	return "gs://" + Bucket + "/" + prefix + "?endpoint=" + s.Endpoint()
}

// Close kills the server and waits for it; its data was in its memory.
func (s *Server) Close() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// CreateBucket makes a bucket through the JSON API.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	body, err := json.Marshal(map[string]string{"name": name})
	if err != nil {
		return err
	}
	return s.do(ctx, http.MethodPost, "/storage/v1/b?project=faster-test", "application/json", body)
}

// Put uploads an object through the JSON API (a simple media upload).
func (s *Server) Put(ctx context.Context, bucket, key string, data []byte) error {
	q := url.Values{"uploadType": {"media"}, "name": {key}}
	return s.do(ctx, http.MethodPost, "/upload/storage/v1/b/"+url.PathEscape(bucket)+"/o?"+q.Encode(), "application/octet-stream", data)
}

func (s *Server) do(ctx context.Context, method, path, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, s.Endpoint()+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

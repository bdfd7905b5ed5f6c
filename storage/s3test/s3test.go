// Package s3test runs a real S3 server for tests: versitygw (Apache-2.0),
// built from the Go module proxy at the version the nested module
// internal/testservers pins (a tool dependency there, not in the library's
// go.mod), cached under os.UserCacheDir()/faster-test-bin, and started
// on a free loopback port with a posix backend over a temporary directory.
// It can be stopped and started again on the same port and data, to test
// clients through a server restart. StartIn runs it elsewhere, e.g. in a
// network namespace; every server keeps an access log (Requests: who asked
// for what).
package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/faster-training/faster/storage/internal/testbin"
)

// The S3 tests run against versitygw (Apache-2.0), a real S3 gateway, built
// from the module proxy at the version internal/testservers/go.mod pins and
// started on loopback with a posix backend on a temporary directory.
const (
	module = "github.com/versity/versitygw"
	Access = "faster-test"
	Secret = "faster-test-secret"
	Bucket = "faster"
)

var vgwBinary = &testbin.Binary{Name: "versitygw", Module: module, Pkg: module + "/cmd/versitygw"}

// Binary builds the server once per machine: the binary is cached under
// os.UserCacheDir()/faster-test-bin, keyed by the versitygw and Go versions.
func Binary() (string, error) { return vgwBinary.Build() }

// BinaryPath returns where the binary of the pinned version is cached.
func BinaryPath() (bin, version string, err error) { return vgwBinary.Path() }

// Server is one running versitygw.
type Server struct {
	bin, root, data string // root holds data (the posix backend's), the access log and the socket
	addr            string
	cmd             *exec.Cmd
	exited          chan struct{}
	prefix          []string // the command the server runs under
	viaSocket       bool     // the test's own client goes through ctl, a unix socket
	ctl             string
	log             string       // the access log
	http            *http.Client // the test's own client: probes, buckets, uploads
}

// Start starts versitygw on a free loopback port over a new data
// directory.
func Start() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	addr, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	return start(&Server{bin: bin, addr: addr, http: http.DefaultClient})
}

func start(s *Server) (*Server, error) {
	root, err := os.MkdirTemp("", "faster-s3-*")
	if err != nil {
		return nil, err
	}
	s.root, s.data, s.log = root, filepath.Join(root, "data"), filepath.Join(root, "access.log")
	if s.viaSocket {
		s.ctl = filepath.Join(root, "ctl.sock")
	}
	if err := os.Mkdir(s.data, 0o755); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if err := s.Restart(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return s, nil
}

// StartIn starts versitygw serving on listen (ip:port) under the command
// prefix, e.g. {"ip", "netns", "exec", NS} to run it in a network
// namespace, which the host's own network may not reach: the test's own
// client (Client, CreateBucket, Put, the readiness probe) goes through a
// unix socket beside the data instead, and Endpoint is the address the
// namespace's clients use.
func StartIn(prefix []string, listen string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, addr: listen, prefix: prefix, viaSocket: true}
	var d net.Dialer
	s.http = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", s.ctl)
	}}}
	return start(s)
}

// Endpoint is the server's http:// address.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Restart runs the server on s.addr and waits until it answers.
func (s *Server) Restart() error {
	args := []string{"--port", s.addr, "--access", Access, "--secret", Secret, "--quiet", "--access-log", s.log}
	if s.viaSocket {
		os.Remove(s.ctl) // left by the previous run
		args = append(args, "--port", s.ctl)
	}
	args = append(slices.Concat(s.prefix, []string{s.bin}, args), "posix", s.data)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	testbin.SetDeathSignal(cmd)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("versitygw exited at start: %s", logs.String())
		default:
		}
		resp, err := s.http.Get(s.Endpoint() + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return errors.New("versitygw did not answer within 30s")
}

// Stop kills the server and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(s.root)
}

// Client returns an AWS SDK client for what gocloud does not do (buckets).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint()),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(Access, Secret, ""),
		HTTPClient:   s.http,
	})
}

// CreateBucket makes a bucket.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	_, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	return err
}

// RootURL is the s3:// URL of prefix in the test bucket; credentials come
// from the environment TestMain sets.
func (s *Server) RootURL(prefix string) string {
	return "s3://" + Bucket + "/" + prefix + "?endpoint=" + s.Endpoint()
}

// DataDir is the directory the posix backend serves: bucket B's object K is
// the file DataDir()/B/K.
func (s *Server) DataDir() string { return s.data }

// Put uploads an object.
func (s *Server) Put(ctx context.Context, bucket, key string, data []byte) error {
	_, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	return err
}

// SetEnv points the AWS SDK at static test credentials and nothing from
// this machine's AWS configuration; call it before opening s3:// URLs.
func SetEnv() {
	os.Setenv("AWS_ACCESS_KEY_ID", Access)
	os.Setenv("AWS_SECRET_ACCESS_KEY", Secret)
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Setenv("AWS_CONFIG_FILE", os.DevNull)
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	for _, k := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "STORAGE_EMULATOR_HOST"} {
		os.Unsetenv(k)
	}
}

// Request is one request the server answered, from its access log.
type Request struct {
	Remote    string // the client's IP address
	Operation string // e.g. s3_GetObject
	Key       string // the object's key, "-" for none
	Status    int    // (versitygw logs 0 for a GET's bytes sent: not kept)
}

// Requests returns the requests answered so far, in order.
func (s *Server) Requests() ([]Request, error) {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return nil, err
	}
	var out []Request
	for _, line := range strings.Split(string(b), "\n") {
		// bucket-owner bucket [time zone] remote requester request-id
		// operation key request-uri status …
		f := strings.Fields(line)
		if len(f) < 11 || !strings.HasPrefix(f[2], "[") || !strings.HasSuffix(f[3], "]") {
			continue // the log's header line
		}
		r := Request{Remote: f[4], Operation: f[7], Key: f[8]}
		r.Status, _ = strconv.Atoi(f[10])
		out = append(out, r)
	}
	return out, nil
}

// FileExists reports whether p exists.
func FileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

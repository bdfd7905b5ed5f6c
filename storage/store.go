package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob" // registers s3:// with blob.DefaultURLMux
	"google.golang.org/api/option"
)

// Store is a dataset root: a local directory or an s3://, gs://, http:// or
// https:// URL. It is safe for concurrent use; each Reader is not.
type Store struct {
	root   string // the root for messages: no query, no credentials
	prefix string // key prefix of every object, "" or ending in "/"
	local  string // the directory, for local roots
	be     backend
	opts   Options
	pool   chan []byte // ring buffers free for reuse; capped
	clock  clock       // of stall windows and retry deadlines: realClock, or a test's
}

// IsURL reports whether root names remote storage (s3://, gs://, http://,
// https://) rather than a local path; file:// URLs count as local.
func IsURL(root string) bool {
	scheme, _, ok := strings.Cut(root, "://")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "s3", "gs", "http", "https":
		return true
	}
	return false
}

// Open opens the dataset root: a local path, file:///abs/path,
// s3://bucket/prefix?endpoint=…&region=…, gs://bucket/prefix or
// http(s)://host/path. It checks the options but does not touch the network
// (a missing bucket shows at the first List or read). opts may be nil.
func Open(ctx context.Context, root string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Store{opts: o, pool: make(chan []byte, 4*o.ReadAheadBuffers), clock: realClock{}}
	fail := func(err error) (*Store, error) {
		return nil, newError("open", s.root, -1, err)
	}
	if root == "" {
		s.root = `""`
		return fail(errors.New("empty dataset root"))
	}
	scheme, _, isURL := strings.Cut(root, "://")
	if !isURL {
		return s.openLocal(ctx, root)
	}
	u, err := url.Parse(root)
	if err != nil {
		s.root = root
		return fail(err)
	}
	s.root = redact(u)
	switch strings.ToLower(scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return fail(fmt.Errorf("file URL with host %q", u.Host))
		}
		return s.openLocal(ctx, u.Path)
	case "s3":
		s.prefix = keyPrefix(u.Path)
		b, err := blob.OpenBucket(ctx, "s3://"+u.Host+"?"+s3Query(u.Query()).Encode())
		if err != nil {
			return fail(withoutURL(err))
		}
		s.be = &blobBackend{b: b}
	case "gs":
		s.prefix = keyPrefix(u.Path)
		bb, err := openGCS(ctx, u)
		if err != nil {
			return fail(err)
		}
		s.be = bb
	case "http", "https":
		s.prefix = keyPrefix(u.Path)
		c := o.HTTPClient
		if c == nil {
			c = newHTTPClient()
		}
		s.be = &httpBackend{client: c, base: url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}}
	default:
		return fail(fmt.Errorf("unsupported scheme %q (want a path, file, s3, gs, http or https)", scheme))
	}
	return s, nil
}

func (s *Store) openLocal(ctx context.Context, path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, newError("open", path, -1, err)
	}
	s.root, s.local = abs, abs
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = &notExistError{err}
		}
		return nil, newError("open", abs, -1, err)
	}
	if !fi.IsDir() {
		return nil, newError("open", abs, -1, errors.New("not a directory"))
	}
	b, err := fileblob.OpenBucket(abs, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		return nil, newError("open", abs, -1, err)
	}
	s.be = &blobBackend{b: b}
	return s, nil
}

// withoutURL drops gocloud's "open bucket URL: " layers, whose URL carries
// the query, from err.
func withoutURL(err error) error {
	for strings.Contains(err.Error(), "?") {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	return err
}

// keyPrefix turns a URL path into a key prefix: "" or "a/b/".
func keyPrefix(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return ""
	}
	return p + "/"
}

// redact drops the query (endpoints, tokens) and any password from u.
func redact(u *url.URL) string {
	v := *u
	v.RawQuery, v.ForceQuery, v.Fragment = "", false, ""
	if v.User != nil {
		v.User = url.User(v.User.Username())
	}
	return v.String()
}

// s3Query completes the query of an s3:// URL for gocloud's s3blob: a custom
// endpoint (in the URL or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL) implies
// path-style addressing, a missing region defaults to us-east-1, and
// checksums are computed only where the API requires them, which is what
// S3-compatible servers expect.
func s3Query(q url.Values) url.Values {
	q = cloneValues(q)
	endpoint := q.Get("endpoint") != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	if endpoint && !q.Has("use_path_style") && !q.Has("s3ForcePathStyle") {
		q.Set("use_path_style", "true")
	}
	if !q.Has("region") && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		q.Set("region", "us-east-1")
	}
	if !q.Has("request_checksum_calculation") {
		q.Set("request_checksum_calculation", "when_required")
	}
	if !q.Has("response_checksum_validation") {
		q.Set("response_checksum_validation", "when_required")
	}
	return q
}

func cloneValues(q url.Values) url.Values {
	c := make(url.Values, len(q))
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// openGCS opens gs://bucket. An endpoint query parameter (or
// STORAGE_EMULATOR_HOST, handled by gcsblob) points at an emulator such as
// fake-gcs-server and needs no credentials; without it the bucket uses
// Application Default Credentials.
func openGCS(ctx context.Context, u *url.URL) (*blobBackend, error) {
	q := cloneValues(u.Query())
	endpoint := q.Get("endpoint")
	q.Del("endpoint")
	if endpoint == "" {
		b, err := blob.OpenBucket(ctx, "gs://"+u.Host+"?"+q.Encode())
		if err != nil {
			return nil, withoutURL(err)
		}
		return &blobBackend{b: b}, nil
	}
	if len(q) > 0 {
		return nil, fmt.Errorf("gs:// with endpoint takes no other query parameters, got %q", q.Encode())
	}
	// JSON reads: emulators serve objects under the JSON API's path more
	// faithfully than under the XML API's.
	c, err := storage.NewClient(ctx, option.WithoutAuthentication(),
		option.WithEndpoint(strings.TrimSuffix(endpoint, "/")+"/storage/v1/"), storage.WithJSONReads())
	if err != nil {
		return nil, err
	}
	b, err := gcsblob.OpenBucket(ctx, nil, u.Host, &gcsblob.Options{Client: c})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &blobBackend{b: b, onClose: c.Close}, nil
}

// Close releases the backend's connections. Readers must be closed first.
func (s *Store) Close() error {
	err := s.be.close()
	for {
		select {
		case <-s.pool:
		default:
			return err
		}
	}
}

// Root returns the dataset root as given, without query parameters or
// passwords.
func (s *Store) Root() string { return s.root }

// LocalDir returns the directory of a local root and true, or "" and false
// for remote roots; callers may then use the file system directly.
func (s *Store) LocalDir() (string, bool) { return s.local, s.local != "" }

// URL returns the URL (for local roots the path) of object name, as errors
// name it.
func (s *Store) URL(name string) string {
	if s.local != "" {
		return filepath.Join(s.local, filepath.FromSlash(name))
	}
	return strings.TrimSuffix(s.root, "/") + "/" + name
}

// List returns the objects under the root whose names start with prefix,
// sorted by name, with their sizes. Names are relative to the root.
func (s *Store) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, newError("list", s.URL(prefix), -1, err)
	}
	r := s.retrier()
	for {
		out, err := s.be.list(ctx, s.prefix+prefix)
		if err == nil {
			for i := range out {
				out[i].Name = strings.TrimPrefix(out[i].Name, s.prefix)
			}
			return out, nil
		}
		if err = r.wait(ctx, err); err != nil {
			return nil, newError("list", s.URL(prefix), -1, err)
		}
	}
}

// Stat returns the size and modification time of object name.
func (s *Store) Stat(ctx context.Context, name string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, newError("stat", s.URL(name), -1, err)
	}
	r := s.retrier()
	for {
		info, err := s.be.stat(ctx, s.prefix+name)
		if err == nil {
			info.Name = name
			return info, nil
		}
		if err = r.wait(ctx, err); err != nil {
			return ObjectInfo{}, newError("stat", s.URL(name), -1, err)
		}
	}
}

// retrier starts the retries of one operation.
func (s *Store) retrier() retrier {
	return retrier{p: s.opts.Retry, clk: s.clock, need: s.opts.stallFloor()}
}

// watchdog starts the stall checks of an attempt that has left bytes to
// deliver, aborted by abort.
func (s *Store) watchdog(left int64, abort func()) *watchdog {
	return newWatchdog(s.clock, s.opts.StallTimeout, s.opts.stallFloor(), left, abort)
}

// buffer takes a ring buffer from the pool or makes one.
func (s *Store) buffer() []byte {
	select {
	case b := <-s.pool:
		return b
	default:
		return make([]byte, s.opts.BufferSize)
	}
}

// release returns a ring buffer to the pool, or drops it when the pool is
// full.
func (s *Store) release(b []byte) {
	select {
	case s.pool <- b:
	default:
	}
}

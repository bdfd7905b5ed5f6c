package storage

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// httpBackend reads http:// and https:// roots with plain GET and Range
// requests. Listing walks HTML directory indexes (Go's http.FileServer,
// nginx autoindex, python -m http.server) and asks HEAD for sizes.
type httpBackend struct {
	client *http.Client
	base   url.URL // scheme, userinfo and host; keys become its path
}

func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: t}
}

func (h *httpBackend) url(key string) string {
	u := h.base
	u.Path = "/" + key
	return u.String()
}

func (h *httpBackend) do(ctx context.Context, method, key, rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.url(key), nil)
	if err != nil {
		return nil, err
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	return h.client.Do(req)
}

func statusErr(resp *http.Response) error {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	err := &statusError{code: resp.StatusCode, status: resp.Status}
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
		return &notExistError{err}
	}
	return err
}

func modTime(resp *http.Response) time.Time {
	t, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
	return t
}

// parseContentRange returns the total size of "bytes a-b/total".
func parseContentRange(s string) (start, total int64, ok bool) {
	s, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	total, err2 := strconv.ParseInt(tot, 10, 64)
	return start, total, err1 == nil && err2 == nil
}

// errNoSize is a response to a range request that gives no size: neither a
// Content-Range total (206) nor a Content-Length (200).
var errNoSize = errors.New("the server gives no size (no Content-Range total, no Content-Length): an object of unknown length (a generated or endless body) cannot be read by range")

type limitedBody struct {
	io.Reader
	io.Closer
}

func (h *httpBackend) open(ctx context.Context, key string, off, n int64) (io.ReadCloser, ObjectInfo, error) {
	rng := "bytes=" + strconv.FormatInt(off, 10) + "-"
	if n >= 0 {
		if n == 0 {
			return nil, ObjectInfo{}, fmt.Errorf("empty range")
		}
		rng += strconv.FormatInt(off+n-1, 10)
	}
	resp, err := h.do(ctx, http.MethodGet, key, rng)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	info := ObjectInfo{Name: key, ModTime: modTime(resp)}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != off {
			resp.Body.Close()
			return nil, info, fmt.Errorf("bad Content-Range %q for Range %q", resp.Header.Get("Content-Range"), rng)
		}
		info.Size = total
		return resp.Body, info, nil
	case http.StatusOK:
		// The server ignored Range: skip to off and cut at off+n.
		info.Size = resp.ContentLength
		if info.Size < 0 {
			// A body without a length (chunked: generated, or endless)
			// has no size to check nor ranges to resume at; it was read
			// as 0 bytes ("unexpected end of JSON input").
			resp.Body.Close()
			return nil, info, errNoSize
		}
		if off > 0 {
			if _, err := io.CopyN(io.Discard, resp.Body, off); err != nil {
				resp.Body.Close()
				return nil, info, err
			}
		}
		if n >= 0 {
			return limitedBody{io.LimitReader(resp.Body, n), resp.Body}, info, nil
		}
		return resp.Body, info, nil
	default:
		return nil, info, statusErr(resp)
	}
}

func (h *httpBackend) stat(ctx context.Context, key string) (ObjectInfo, error) {
	resp, err := h.do(ctx, http.MethodHead, key, "")
	if err != nil {
		return ObjectInfo{}, err
	}
	switch {
	case resp.StatusCode == http.StatusOK && resp.ContentLength >= 0:
		resp.Body.Close()
		return ObjectInfo{Name: key, Size: resp.ContentLength, ModTime: modTime(resp)}, nil
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented:
		// No HEAD, or no length in it: ask for the first byte instead.
		resp.Body.Close()
		body, info, err := h.open(ctx, key, 0, 1)
		if err != nil {
			return ObjectInfo{}, err
		}
		body.Close()
		return info, nil
	default:
		return ObjectInfo{}, statusErr(resp)
	}
}

var hrefRE = regexp.MustCompile(`(?i)<a\s[^>]*?href\s*=\s*(?:"([^"]*)"|'([^']*)')`)

// maxListDepth bounds the directory walk of list.
const maxListDepth = 32

func (h *httpBackend) list(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var keys []string
	seen := map[string]bool{}
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > maxListDepth {
			return fmt.Errorf("directory index deeper than %d levels", maxListDepth)
		}
		resp, err := h.do(ctx, http.MethodGet, dir, "")
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			err := statusErr(resp)
			if depth == 0 && resp.StatusCode == http.StatusNotFound {
				return nil // nothing under prefix
			}
			return err
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			return fmt.Errorf("%w: list needs an HTML directory index at %s, got %q", ErrUnsupported, h.url(dir), ct)
		}
		page, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return err
		}
		for _, m := range hrefRE.FindAllSubmatch(page, -1) {
			ref := string(m[1]) + string(m[2])
			ref = html.UnescapeString(ref)
			if i := strings.IndexAny(ref, "?#"); i >= 0 {
				ref = ref[:i]
			}
			if ref == "" || strings.Contains(ref, ":") || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, ".") {
				continue // other sites, absolute paths, parents, sort links
			}
			name, err := url.PathUnescape(ref)
			if err != nil || strings.Contains(strings.TrimSuffix(name, "/"), "/") {
				continue
			}
			key := dir + name
			if strings.HasSuffix(name, "/") {
				if strings.HasPrefix(key, prefix) || strings.HasPrefix(prefix, key) {
					if err := walk(key, depth+1); err != nil {
						return err
					}
				}
				continue
			}
			if strings.HasPrefix(key, prefix) && !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
		return nil
	}
	if err := walk(prefix[:strings.LastIndex(prefix, "/")+1], 0); err != nil {
		return nil, err
	}
	sort.Strings(keys)
	out := make([]ObjectInfo, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, k := range keys {
		g.Go(func() error {
			info, err := h.stat(gctx, k)
			out[i] = info
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (h *httpBackend) close() error {
	h.client.CloseIdleConnections()
	return nil
}

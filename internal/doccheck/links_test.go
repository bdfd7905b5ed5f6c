// Package doccheck holds the tests that keep the project's Markdown true to
// the tree: every relative link names a file that exists and, where it has
// one, an anchor that is a heading of that file.
package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile("(?m)^#{1,6} +(.+?) *$")
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
)

// slug is GitHub's anchor for a heading: lower case, punctuation other than
// '-' and '_' dropped, spaces turned into '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists a Markdown file's heading anchors, numbering repeats as
// GitHub does (x, x-1, x-2, …).
func anchors(text string) map[string]bool {
	text = fenceRE.ReplaceAllString(text, "")
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(text, -1) {
		s := slug(m[1])
		a := s
		if n := seen[s]; n > 0 {
			a = s + "-" + strconv.Itoa(n)
		}
		seen[s]++
		out[a] = true
	}
	return out
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Loading (the study's \"Data Loading\" table, on this machine)":              "loading-the-studys-data-loading-table-on-this-machine",
		"From the same start, batch 512 (`bench/run_tta_seeds.sh`, in `make bench`)": "from-the-same-start-batch-512-benchrun_tta_seedssh-in-make-bench",
		"FixRes: BatchNorm statistics at the test resolution (`--fixres-bn`)":        "fixres-batchnorm-statistics-at-the-test-resolution---fixres-bn",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# A\n## A\n```\n# A\n```\n### A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["a-3"] {
		t.Error("anchors: a heading inside a code fence was counted")
	}
}

// TestLinks checks README.md and docs/*.md: each relative link's file exists
// and each anchor is a heading of its file.
func TestLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := fenceRE.ReplaceAllString(string(b), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := f
			if target != "" {
				path = filepath.Join(filepath.Dir(f), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %v", f, link, err)
					continue
				}
			}
			checked++
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			a, err := anchorsOf(path)
			if err != nil {
				t.Errorf("%s: link %q: %v", f, link, err)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor %q", f, link, path, anchor)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d links checked: the link pattern or the file list is wrong", checked)
	}
}

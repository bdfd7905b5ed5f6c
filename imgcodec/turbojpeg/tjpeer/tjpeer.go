//go:build cgo

// Package tjpeer calls libjpeg-turbo's own TurboJPEG API (tjDecompress2),
// the peer that imgcodec's decode benchmark measures itself against in the
// same run. It loads libturbojpeg.so.0 with dlopen, so that building the
// module needs no TurboJPEG headers; Open fails where the library is
// missing (Debian libturbojpeg0, pulled in by libjpeg-turbo-progs).
package tjpeer

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef void *(*tj_init_fn)(void);
typedef int (*tj_header_fn)(void *, const unsigned char *, unsigned long, int *, int *, int *, int *);
typedef int (*tj_decomp_fn)(void *, const unsigned char *, unsigned long, unsigned char *, int, int, int, int, int);
typedef int (*tj_destroy_fn)(void *);

static tj_init_fn p_init;
static tj_header_fn p_header;
static tj_decomp_fn p_decomp;
static tj_destroy_fn p_destroy;

static int tjp_open(void) {
	void *h = dlopen("libturbojpeg.so.0", RTLD_NOW);
	if (!h) return -1;
	p_init = (tj_init_fn)dlsym(h, "tjInitDecompress");
	p_header = (tj_header_fn)dlsym(h, "tjDecompressHeader3");
	p_decomp = (tj_decomp_fn)dlsym(h, "tjDecompress2");
	p_destroy = (tj_destroy_fn)dlsym(h, "tjDestroy");
	return p_init && p_header && p_decomp && p_destroy ? 0 : -2;
}

static void *tjp_new(void) { return p_init(); }
static void tjp_free(void *h) { p_destroy(h); }
static int tjp_header(void *h, const unsigned char *src, unsigned long n, int *w, int *hh) {
	int ss, cs;
	return p_header(h, src, n, w, hh, &ss, &cs);
}
// TJPF_RGB = 0, flags 0 (accurate IDCT, fancy upsampling: libjpeg's defaults).
static int tjp_decode(void *h, const unsigned char *src, unsigned long n, unsigned char *dst, int w, int hh) {
	return p_decomp(h, src, n, dst, w, w * 3, hh, 0, 0);
}
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

var (
	once    sync.Once
	openErr error
)

// Decoder is one TurboJPEG decompressor handle; not safe for concurrent use.
type Decoder struct{ h unsafe.Pointer }

// Open loads libturbojpeg and returns a decompressor.
func Open() (*Decoder, error) {
	once.Do(func() {
		if C.tjp_open() != 0 {
			openErr = errors.New("tjpeer: cannot load libturbojpeg.so.0 (install libturbojpeg0)")
		}
	})
	if openErr != nil {
		return nil, openErr
	}
	return &Decoder{h: C.tjp_new()}, nil
}

// Close frees the handle.
func (d *Decoder) Close() { C.tjp_free(d.h) }

// Size returns the image size.
func (d *Decoder) Size(data []byte) (int, int, error) {
	var w, h C.int
	if C.tjp_header(d.h, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), &w, &h) != 0 {
		return 0, 0, errors.New("tjpeer: bad header")
	}
	return int(w), int(h), nil
}

// Decode decodes data to RGB at w x h, which TurboJPEG reaches by DCT
// scaling when smaller than the image; dst must hold w*h*3 bytes.
func (d *Decoder) Decode(data, dst []byte, w, h int) error {
	if C.tjp_decode(d.h, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), (*C.uchar)(unsafe.Pointer(&dst[0])), C.int(w), C.int(h)) != 0 {
		return errors.New("tjpeer: decode failed")
	}
	return nil
}

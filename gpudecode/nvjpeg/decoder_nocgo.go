//go:build !cgo

package nvjpeg

// Without cgo there is no dlopen: Open fails with ErrNoCgo; the header
// check and the kernels' tables work as with cgo.

// Decoder is unavailable without cgo.
type Decoder struct{}

// Buffer is unavailable without cgo.
type Buffer struct{}

func (b *Buffer) Size() int   { return 0 }
func (b *Buffer) Ptr() uint64 { return 0 }

// Probe says why this build has no GPU decode.
func Probe() string { return "no (built without cgo)" }

// Open fails: this build cannot load nvJPEG.
func Open(o Options) (*Decoder, error)                              { return nil, ErrNoCgo }
func (d *Decoder) Device() string                                   { return "" }
func (d *Decoder) Alloc(int) (*Buffer, error)                       { return nil, ErrNoCgo }
func (d *Decoder) Free(*Buffer) error                               { return ErrNoCgo }
func (d *Decoder) Live() int                                        { return 0 }
func (d *Decoder) IPCHandle(*Buffer) ([]byte, error)                { return nil, ErrNoCgo }
func (d *Decoder) Upload(*Buffer, int, []byte) error                { return ErrNoCgo }
func (d *Decoder) Download([]byte, *Buffer, int) error              { return ErrNoCgo }
func (d *Decoder) DecodeBatch([]Job, *Buffer, Rows) (Result, error) { return Result{}, ErrNoCgo }
func (d *Decoder) Close() error                                     { return ErrNoCgo }

package tfrecord_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/faster-training/faster/tfrecord"
)

// Records written by a Writer read back, in order, from a Reader over the
// same bytes (a file TensorFlow's TFRecordDataset also reads); Offset says
// where each record starts, as an index (.idx) records it.
func Example() {
	var buf bytes.Buffer
	w := tfrecord.NewWriter(&buf)
	for _, rec := range []string{"first", "second", "third"} {
		if err := w.Write([]byte(rec)); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	r := tfrecord.NewReader(bytes.NewReader(buf.Bytes()))
	for {
		off := r.Offset()
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err) // a *tfrecord.CorruptError names the offset
		}
		fmt.Printf("@%d %s\n", off, rec)
	}
	// Output:
	// @0 first
	// @21 second
	// @43 third
}

// A damaged record is an error naming its offset, and the reader stops
// there rather than returning wrong bytes.
func ExampleReader_corrupt() {
	var buf bytes.Buffer
	w := tfrecord.NewWriter(&buf)
	w.Write([]byte("intact"))
	w.Write([]byte("damaged"))
	w.Close()
	b := buf.Bytes()
	b[len(b)-6] ^= 0xff // flip a byte of the second record's data

	r := tfrecord.NewReader(bytes.NewReader(b))
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Printf("%s\n", rec)
	}
	// Output:
	// intact
	// error: tfrecord: corrupt at offset 22: data CRC mismatch (record of 7 bytes)
}

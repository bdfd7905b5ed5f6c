package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/train"
)

// Same start (TrainConfig.SameStart; `faster bench train --target-accuracy A
// --same-start`, the default): the two engines draw their starting weights and shuffle their
// data with their own generators, so one --seed gives them two different
// trainings, and at a high rate one draw can diverge where the other does
// not. With the same start the peer begins from ours' starting weights and
// visits the training images in ours' order, so that what differs between
// the two runs is the engines' arithmetic alone.

// WriteSameStart writes into dir ours' starting weights for c (a
// checkpoint at epoch 0, step 0: what faster train builds from the seed,
// in the format it resumes from) and ours' sample order of every epoch
// (an .npy of int32, epochs × training images), and returns the peer's
// flags that read them.
func WriteSameStart(dir string, c TrainConfig) ([]string, error) {
	// The training split's size, side and classes decide the model and
	// the permutations; its pixels are not needed.
	src, err := source.OpenIDX(c.Data, "train")
	if err != nil {
		return nil, fmt.Errorf("same start: %w", err)
	}
	n := len(src.Items())
	if c.Limit > 0 {
		n = min(n, c.Limit)
	}
	// The peer reads the same files and cannot skip a damaged image.
	for i := range n {
		if err := src.Damage(i); err != nil {
			return nil, fmt.Errorf("same start: %w", err)
		}
	}
	side, _ := src.Size()
	b := train.NewReference(train.BackendOptions{Threads: 1})
	net, err := fit.NewModel(b, "thinnet", c.Filters, 1, side, len(src.Classes()), c.Seed)
	if err != nil {
		return nil, fmt.Errorf("same start: %w", err)
	}
	defer net.Close()
	tr := train.NewTrainer(b, net, &train.SGD{}, nil, c.Batch, c.Seed)
	ckpt, order := filepath.Join(dir, "start.ckpt"), filepath.Join(dir, "order.npy")
	if err := tr.SaveCheckpoint(ckpt); err != nil {
		return nil, fmt.Errorf("same start: %w", err)
	}
	perms := make([][]int, c.Epochs)
	for e := range perms {
		perms[e] = tr.Order(n, e)
	}
	if err := atomicfile.WriteFile(order, npyInt32(perms), 0o644); err != nil {
		return nil, fmt.Errorf("same start: %w", err)
	}
	return []string{"--init-from", ckpt, "--order-from", order}, nil
}

// npyInt32 encodes rows (all of one length) as a NumPy .npy file (format
// 1.0) of little-endian int32, shape (len(rows), len(rows[0])).
func npyInt32(rows [][]int) []byte {
	n := 0
	if len(rows) > 0 {
		n = len(rows[0])
	}
	header := fmt.Sprintf("{'descr': '<i4', 'fortran_order': False, 'shape': (%d, %d), }", len(rows), n)
	// Magic (6), version (2), header length (2), header: padded with
	// spaces and ended by a newline to a multiple of 64 bytes.
	pad := 64 - (10+len(header)+1)%64
	if pad == 64 {
		pad = 0
	}
	header += strings.Repeat(" ", pad) + "\n"
	var buf bytes.Buffer
	buf.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&buf, binary.LittleEndian, uint16(len(header)))
	buf.WriteString(header)
	var b4 [4]byte
	for _, r := range rows {
		for _, v := range r {
			binary.LittleEndian.PutUint32(b4[:], uint32(int32(v)))
			buf.Write(b4[:])
		}
	}
	return buf.Bytes()
}

//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeUsage(t *testing.T) {
	data := filepath.Join(resizeTree(t), "val")
	for _, args := range [][]string{
		{"serve", data},
		{"serve", data, "--socket", "x", "--fd", "3"},
		{"serve", data, "--fd", "3", "--transform", "none"},
		{"serve", data, "--fd", "3", "--slots", "0"},
		{"serve", data, "--fd", "3", "--interpolation", "lanczos"},
		{"serve"},
	} {
		if code, _, errs := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errs)
		}
	}
	code, _, errs := runCLI(t, "serve", filepath.Join(data, "missing"), "--socket", filepath.Join(t.TempDir(), "s"))
	if code != 1 || !strings.Contains(errs, "missing") || strings.Count(errs, "\n") != 1 {
		t.Errorf("missing data: exit %d, %q", code, errs)
	}
}

// One consumer over --socket: hello, attach (the file goes), one epoch,
// then the consumer leaves and serve returns nil, removing the socket.
func TestServeSocketSession(t *testing.T) {
	data := filepath.Join(resizeTree(t), "val")
	dir := t.TempDir()
	sock, shm := filepath.Join(dir, "s.sock"), filepath.Join(dir, "shm")
	os.Mkdir(shm, 0o755)
	done := make(chan error, 1)
	go func() {
		done <- runServe(context.Background(), serveOptions{data: data, socket: sock, fd: -1,
			loaderFlags: loaderFlags{batch: 1, transform: "eval", resolution: 16, layout: "u8-hwc", numShards: 1, split: "train"},
			slots:       2, shmDir: shm}, io.Discard, io.Discard)
	}()
	var c net.Conn
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		if c, err = net.Dial("unix", sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	recv := func() (byte, []byte) {
		var h [5]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			t.Fatal(err)
		}
		p := make([]byte, binary.LittleEndian.Uint32(h[:4])-1)
		if _, err := io.ReadFull(c, p); err != nil {
			t.Fatal(err)
		}
		return h[4], p
	}
	send := func(typ byte, p []byte) {
		f := binary.LittleEndian.AppendUint32(nil, uint32(len(p)+1))
		if _, err := c.Write(append(append(f, typ), p...)); err != nil {
			t.Fatal(err)
		}
	}
	typ, p := recv()
	var hello struct {
		Path  string `json:"path"`
		Shape []int  `json:"shape"`
		Len   int    `json:"len"`
	}
	if typ != 'H' || json.Unmarshal(p, &hello) != nil || hello.Len != 1 || len(hello.Shape) != 3 {
		t.Fatalf("hello %q %s", typ, p)
	}
	if _, err := os.Stat(hello.Path); err != nil {
		t.Fatal(err)
	}
	send('A', nil)
	send('E', make([]byte, 8))
	if typ, p = recv(); typ != 'R' || !strings.HasSuffix(string(p), "dog/2.jpg") {
		t.Fatalf("ready %q %q", typ, p)
	}
	send('F', p[:4])
	if typ, _ = recv(); typ != 'D' {
		t.Fatalf("end %q", typ)
	}
	if _, err := os.Stat(hello.Path); !os.IsNotExist(err) {
		t.Fatalf("shared memory file after attach: %v", err)
	}
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not exit after the consumer left")
	}
	if ents, _ := os.ReadDir(shm); len(ents) > 0 {
		t.Fatalf("left in the shm dir: %v", ents)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

"""The CUDA runtime the device path opens its IPC handles with, against a
stand-in libcudart built by gcc (skipped without gcc), each case in a
child Python so that no stand-in stays loaded in this process (the GPU
tests beside these find the real runtime already loaded):

- cudart() takes the runtime already loaded (torch's), found by soname
  with RTLD_NOLOAD or, when its soname is a wheel's renamed one, in
  /proc/self/maps, before another copy the search would find;
- _CudaSlots opens and closes the handles with the server's GPU current
  and leaves the user's current device as it was, a failed open
  included.
Needs neither torch nor a GPU (python -m unittest)."""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# The stand-in: its current device per process (as the runtime's is per
# thread, one thread here), a handle opened on the device current at the
# time, its first byte 0xff refused; copy() says which build it is.
STANDIN = r"""
#include <stdio.h>
#include <string.h>
static int current;
int copy(void) { return COPY; }
int cudaGetDevice(int *d) { *d = current; return 0; }
int cudaSetDevice(int d) {
	if (d < 0 || d > 3)
		return 101; /* cudaErrorInvalidDevice */
	current = d;
	return 0;
}
typedef struct { unsigned char reserved[64]; } handle;
static char mem[8][16];
int cudaIpcOpenMemHandle(void **p, handle h, unsigned flags) {
	if (h.reserved[0] == 0xff)
		return 400; /* cudaErrorInvalidResourceHandle */
	printf("open %d on device %d flags %u\n", h.reserved[0], current, flags);
	*p = mem[h.reserved[0] & 7];
	return 0;
}
const char *cudaGetErrorString(int e) {
	return e == 400 ? "invalid resource handle" : e == 101 ? "invalid device ordinal" : "unknown error";
}
int cudaIpcCloseMemHandle(void *p) {
	printf("close %d on device %d\n", (int)(((char(*)[16])p) - mem), current);
	return 0;
}
"""


def build(cc, d, name, soname, copy):
    src = os.path.join(d, "standin_%d.c" % copy)
    with open(src, "w") as f:
        f.write(STANDIN)
    out = os.path.join(d, name)
    subprocess.run([cc, "-shared", "-fPIC", "-w", "-DCOPY=%d" % copy, "-Wl,-soname," + soname, "-o", out, src],
                   check=True, capture_output=True)
    return out


class CudartStandInTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cc = shutil.which("gcc") or shutil.which("cc")
        if cls.cc is None:
            raise unittest.SkipTest("no gcc")
        cls.dir = tempfile.mkdtemp(prefix="faster-cudart-")
        # copy 2: what a search by soname finds (LD_LIBRARY_PATH)
        os.mkdir(os.path.join(cls.dir, "search"))
        build(cls.cc, os.path.join(cls.dir, "search"), "libcudart.so.13", "libcudart.so.13", 2)
        # copy 1, loaded first by path as torch would: once under the
        # runtime's soname, once under a wheel's renamed one
        cls.loaded = build(cls.cc, cls.dir, "libcudart.so.13", "libcudart.so.13", 1)
        cls.renamed = build(cls.cc, cls.dir, "libcudart-0a1b2c3d.so.13", "libcudart-0a1b2c3d.so.13", 1)
        # copy 3: another in a torch's lib/, which cudart(torch) looks in
        cls.torch_dir = os.path.join(cls.dir, "site", "torch")
        os.makedirs(os.path.join(cls.torch_dir, "lib"))
        build(cls.cc, os.path.join(cls.torch_dir, "lib"), "libcudart.so.13", "libcudart.so.13", 3)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def child(self, preload, body):
        """Runs body in a child Python with preload already loaded (by
        path, RTLD_GLOBAL: as torch's libraries load it) and the search
        copy on LD_LIBRARY_PATH; its stdout."""
        script = "import ctypes, os, sys\nsys.path.insert(0, %r)\n" % PYTHON_DIR
        if preload:
            script += "ctypes.CDLL(%r, mode=ctypes.RTLD_GLOBAL)\n" % preload
        script += "from faster import _device\n" + textwrap.dedent(body)
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(self.dir, "search"), PYTHONDONTWRITEBYTECODE="1")
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, "child failed:\n%s%s" % (r.stdout, r.stderr))
        return r.stdout

    def test_takes_the_runtime_already_loaded(self):
        body = """
            import types
            torch = types.SimpleNamespace(__file__=%r) if %r else None
            lib = _device.cudart(torch)
            lib.copy.restype = ctypes.c_int
            print("copy", lib.copy())
        """
        init = os.path.join(self.torch_dir, "__init__.py")
        for preload, with_torch, want, why in (
                (None, False, 2, "nothing loaded: the search's copy"),
                (None, True, 3, "nothing loaded: torch's lib/ first"),
                (self.loaded, False, 1, "loaded under the soname: that copy"),
                (self.loaded, True, 1, "loaded under the soname: that copy, not torch's lib/'s"),
                (self.renamed, True, 1, "loaded under a renamed soname: that copy")):
            with self.subTest(why=why):
                self.assertIn("copy %d" % want, self.child(preload, body % (init, with_torch)), why)

    def test_current_device_kept(self):
        out = self.child(self.loaded, """
            import types
            torch = types.SimpleNamespace(__file__="/nonexistent/torch/__init__.py",
                                          device=lambda kind, i: "%s:%d" % (kind, i))
            lib = _device.cudart(torch)
            d = ctypes.c_int()
            lib.cudaSetDevice(2)
            slots = _device._CudaSlots(1, [bytes([3]) + bytes(63), bytes([4]) + bytes(63)], torch)
            lib.cudaGetDevice(ctypes.byref(d))
            print("after open: device", d.value, "slots", len(slots.ptrs))
            slots.close()
            lib.cudaGetDevice(ctypes.byref(d))
            print("after close: device", d.value)
            try:
                _device._CudaSlots(1, [bytes([5]) + bytes(63), b"\\xff" + bytes(63)], torch)
            except RuntimeError as e:
                print("refused:", e)
            lib.cudaGetDevice(ctypes.byref(d))
            print("after a failed open: device", d.value)
            try:
                _device._CudaSlots(7, [bytes([6]) + bytes(63)], torch)
            except RuntimeError as e:
                print("refused:", e)
            lib.cudaGetDevice(ctypes.byref(d))
            print("after a bad device: device", d.value)
        """)
        for want in ("open 3 on device 1 flags 1", "open 4 on device 1 flags 1",
                     "after open: device 2 slots 2",
                     "close 3 on device 1", "close 4 on device 1", "after close: device 2",
                     "open 5 on device 1",
                     "refused: faster: cudaIpcOpenMemHandle of the server's slot 1 on cuda:1: CUDA error 400 "
                     "(invalid resource handle)",
                     "close 5 on device 1", "after a failed open: device 2",
                     "refused: faster: cudaSetDevice(7): CUDA error 101 (invalid device ordinal)",
                     "after a bad device: device 2"):
            self.assertIn(want, out)


if __name__ == "__main__":
    unittest.main()

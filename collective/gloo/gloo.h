// The C API of the Gloo shim (gloo.cc) that gloo.go calls. Every function
// catches the C++ exceptions of Gloo: none crosses into Go.
#ifndef FASTER_COLLECTIVE_GLOO_H
#define FASTER_COLLECTIVE_GLOO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A rank's Gloo context and device.
typedef struct fg_comm fg_comm;

// Result codes. On FG_EIO (a connection failed or timed out) and FG_EOTHER
// *err is set to a message to be released with free.
enum { FG_OK = 0, FG_EIO = 1, FG_EOTHER = 2 };

// fg_comm_new connects rank of size through the rendezvous store behind the
// cgo handle store (see fgGoStoreSet and the others in gloo.go), listening
// on iface if it is not empty, else on hostname.
int fg_comm_new(int rank, int size, const char* hostname, const char* iface,
                uintptr_t store, int64_t timeout_ms, fg_comm** out, char** err);

// The collectives work in place on x, a buffer of n elements. On an error
// the context is torn down before they return: its connections are closed
// and x is no longer referenced.
int fg_allreduce_f32(fg_comm* c, float* x, size_t n, char** err);
int fg_allreduce_f64(fg_comm* c, double* x, size_t n, char** err);
int fg_broadcast_f32(fg_comm* c, float* x, size_t n, int root, char** err);
int fg_barrier(fg_comm* c, char** err);

// fg_comm_free closes the connections and releases c.
void fg_comm_free(fg_comm* c);

#ifdef __cplusplus
}
#endif

#endif

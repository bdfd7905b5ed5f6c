//go:build cgo && !faster_serveonly

// The Gloo shim: a rendezvous store that calls back into Go, and the
// collectives of gloo.h. See gloo.go.

#include "gloo.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "_cgo_export.h"

struct fg_comm {
  std::shared_ptr<gloo::transport::Device> dev;
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  uint32_t tag = 0;  // the tag of the next collective, the same on all ranks
};

namespace {

// GoStore is a Gloo store whose operations are those of a collective.Store
// in Go. An error from Go becomes a gloo::IoException.
class GoStore : public gloo::rendezvous::Store {
 public:
  explicit GoStore(uintptr_t h) : h_(h) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    check(fgGoStoreSet(h_, const_cast<char*>(key.data()), key.size(),
                       const_cast<char*>(data.data()), data.size()));
  }

  std::vector<char> get(const std::string& key) override {
    char* v = nullptr;
    size_t n = 0;
    check(fgGoStoreGet(h_, const_cast<char*>(key.data()), key.size(), &v, &n));
    std::vector<char> out(v, v + n);
    free(v);
    return out;
  }

  void wait(const std::vector<std::string>& keys) override {
    // The Go store applies its own timeout, the communicator's.
    for (const auto& key : keys) {
      check(fgGoStoreWait(h_, const_cast<char*>(key.data()), key.size()));
    }
  }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds&) override {
    wait(keys);
  }

 private:
  static void check(char* err) {
    if (err != nullptr) {
      std::string msg(err);
      free(err);
      throw gloo::IoException(msg);
    }
  }

  uintptr_t h_;
};

char* dup(const char* s) {
  char* p = static_cast<char*>(malloc(strlen(s) + 1));
  if (p != nullptr) {
    strcpy(p, s);
  }
  return p;
}

// guard runs f and turns any exception into a result code and message.
template <typename F>
int guard(char** err, F f) {
  try {
    f();
    return FG_OK;
  } catch (const gloo::IoException& e) {
    *err = dup(e.what());
    return FG_EIO;
  } catch (const std::exception& e) {
    *err = dup(e.what());
    return FG_EOTHER;
  } catch (...) {
    *err = dup("unknown C++ exception");
    return FG_EOTHER;
  }
}

// teardown closes c's connections, so that Gloo keeps no reference to the
// caller's buffer and the peers see the failure at once.
void teardown(fg_comm* c) {
  try {
    c->ctx.reset();
    c->dev.reset();
  } catch (...) {
  }
}

// collective runs f on c's context, tearing the context down if f fails.
template <typename F>
int collective(fg_comm* c, char** err, F f) {
  if (!c->ctx) {
    *err = dup("context torn down by an earlier error");
    return FG_EIO;
  }
  uint32_t tag = c->tag++;
  int rc = guard(err, [&] { f(tag); });
  if (rc != FG_OK) {
    teardown(c);
  }
  return rc;
}

using ReduceFunc = void (*)(void*, const void*, const void*, size_t);

template <typename T>
int allreduce(fg_comm* c, T* x, size_t n, char** err) {
  if (n == 0) {
    return FG_OK;
  }
  return collective(c, err, [&](uint32_t tag) {
    gloo::AllreduceOptions opts(c->ctx);
    opts.setOutput(x, n);
    opts.setReduceFunction(static_cast<ReduceFunc>(&gloo::sum<T>));
    opts.setTag(tag);
    gloo::allreduce(opts);
  });
}

}  // namespace

extern "C" {

int fg_comm_new(int rank, int size, const char* hostname, const char* iface,
                uintptr_t store, int64_t timeout_ms, fg_comm** out, char** err) {
  *out = nullptr;
  return guard(err, [&] {
    gloo::transport::tcp::attr attr;
    if (iface != nullptr && *iface != '\0') {
      attr.iface = iface;
    } else {
      attr.hostname = hostname;
    }
    auto c = std::make_unique<fg_comm>();
    c->dev = gloo::transport::tcp::CreateDevice(attr);
    c->ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    c->ctx->setTimeout(std::chrono::milliseconds(timeout_ms));
    GoStore st(store);
    c->ctx->connectFullMesh(st, c->dev);
    *out = c.release();
  });
}

int fg_allreduce_f32(fg_comm* c, float* x, size_t n, char** err) {
  return allreduce(c, x, n, err);
}

int fg_allreduce_f64(fg_comm* c, double* x, size_t n, char** err) {
  return allreduce(c, x, n, err);
}

int fg_broadcast_f32(fg_comm* c, float* x, size_t n, int root, char** err) {
  if (n == 0) {
    return FG_OK;
  }
  return collective(c, err, [&](uint32_t tag) {
    gloo::BroadcastOptions opts(c->ctx);
    opts.setOutput(x, n);
    opts.setRoot(root);
    opts.setTag(tag);
    gloo::broadcast(opts);
  });
}

int fg_barrier(fg_comm* c, char** err) {
  return collective(c, err, [&](uint32_t tag) {
    gloo::BarrierOptions opts(c->ctx);
    opts.setTag(tag);
    gloo::barrier(opts);
  });
}

void fg_comm_free(fg_comm* c) {
  if (c != nullptr) {
    teardown(c);
    delete c;
  }
}

}  // extern "C"

"""torch's TCPStore against faster's store (collective/store_torch_test.go).

  torch_store.py server          serve a TCPStore (is_master=True) on a free
                                 port, print it, then play the server side
  torch_store.py client PORT     connect to the store at 127.0.0.1:PORT as
                                 torch's client, and play the client side

Each side sets and reads keys that the Go test reads and sets, and prints
"ok" at the end; any failure raises (exit 1).
"""
import datetime
import sys

import torch.distributed as dist

T = datetime.timedelta(seconds=30)


def play(store):
    store.set("py/hello", "from torch")
    assert store.get("go/hello") == b"from go", store.get("go/hello")
    store.wait(["go/ready"])  # Go set it last
    assert store.add("counter", 5) == 12  # Go added 7
    assert store.compare_set("go/ready", "yes", "swapped") == b"swapped"
    assert store.get("go/big") == bytes(range(256)) * 4096
    pre = dist.PrefixStore("/worker/attempt_0", store)
    pre.set("x", "1")  # Go reads it as "/worker/attempt_0/x"
    store.set("py/done", "1")


def main():
    if sys.argv[1] == "server":
        srv = dist.TCPStore("127.0.0.1", 0, 1, True, T, wait_for_workers=False)
        print(srv.port, flush=True)
        play(srv)
        srv.wait(["go/done"])
        print("ok", flush=True)
        # Keep serving until the Go side closes our stdin: its last Set
        # still waits for the server's answer, which a server that exited
        # as soon as it saw go/done would cut off (connection reset).
        sys.stdin.read()
        return
    cl = dist.TCPStore("127.0.0.1", int(sys.argv[2]), 2, False, T)
    play(cl)
    assert cl.num_keys() >= 8, cl.num_keys()
    print("ok", flush=True)


main()

"""Is the training loop waiting for input? The loader times, with an
injectable clock, how long each request for the next batch waited and how
long the epoch took; the server tells, at the epoch's end, the pipeline's
ceiling (the images per second it could give) and its limiting stage."""
import time


class InputMeter:
    """Accumulates one epoch's waits. clock() returns seconds (monotonic)."""

    def __init__(self, clock=None):
        self.clock = clock or time.perf_counter
        self.start = None
        self.wait = 0.0
        self.batches = 0
        self.images = 0
        self._t = None

    def begin(self):
        self.start = self.clock()

    def waiting(self):
        self._t = self.clock()

    def got(self, rows):
        self.wait += self.clock() - self._t
        self.batches += 1
        self.images += rows

    def end(self, server=None, epoch=None, cancelled=False):
        """The epoch's report (a dict); server is the end frame's JSON."""
        total = max(self.clock() - self.start, 0.0) if self.start is not None else 0.0
        return report(total, self.wait, self.batches, self.images, server or {}, epoch, cancelled)


# Below this share of the loop's time spent waiting, the loop is not
# input-bound (the loader's first batch alone takes a few percent of a
# short epoch).
INPUT_BOUND = 0.05

_HINTS = {
    "decode": "more workers (num_workers) or a downscaled pack (faster resize --max-size 256, then pack) would help",
    "io": "faster storage, a local cache (cache_dir) or packed shards read sequentially would help",
}


def report(total, wait, batches, images, server, epoch=None, cancelled=False):
    """The numbers of one epoch and the sentence a user reads."""
    ceil = server.get("ceiling") or {}
    verdict = ((server.get("stats") or {}).get("verdict") or {})
    share = wait / total if total > 0 else 0.0
    loop = total - wait
    r = {
        "epoch": epoch, "cancelled": bool(cancelled), "batches": batches, "images": images,
        "seconds": total, "wait_seconds": wait, "input_wait_share": share,
        "input_bound": share >= INPUT_BOUND,
        "images_per_s": images / total if total > 0 else 0.0,
        # What the loop alone would take, had every batch been ready.
        "consumer_images_per_s": images / loop if loop > 0 else float("inf"),
        "loader_ceiling_images_per_s": ceil.get("images_per_s", 0.0),
        "limiting_stage": ceil.get("stage", ""),
        "bottleneck": ceil.get("bottleneck", ""),
        "verdict": verdict.get("detail", ""),
        # The server's CPU time over the epoch (all its threads), and per
        # 1,000 images it served: the loading work's price on a shared
        # machine, where images per second depend on the neighbours.
        "loader_cpu_seconds": server.get("cpu_seconds", 0.0),
        "loader_cpu_seconds_per_1000_images": server.get("cpu_seconds_per_1000_images", 0.0),
    }
    r["summary"] = summarize(r)
    return r


def summarize(r):
    head = "training waited for input %.0f%% of the time (%.1f s of %.1f s)" % (
        100 * r["input_wait_share"], r["wait_seconds"], r["seconds"])
    ceil, b = r["loader_ceiling_images_per_s"], r["bottleneck"]
    if ceil <= 0:
        return head + "; the loader's ceiling is unknown (no statistics from the server)"
    head += "; the loader is %s-bound at %s img/s (stage %s)" % (b, format(int(round(ceil)), ","), r["limiting_stage"])
    if not r["input_bound"]:
        return head + ": not input-bound, the training step is the limit"
    return head + "; " + _HINTS.get(b, "the loader is the limit")

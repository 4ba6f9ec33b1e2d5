"""Peak memory of a process tree, sampled from /proc while it runs (Linux)."""
import os
import threading

from data_gen_bench import _read_kb, _tree_memory_kb


def _children(pid):
    """Direct children of pid, from /proc/PID/task/*/children (Linux, CONFIG_PROC_CHILDREN)."""
    found = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
    except OSError:  # the process (or thread) has just ended
        pass
    return found


def tree_rss_kb(root):
    """(pid, VmRSS in KB) of every live process in root's tree now (zombies have none)."""
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            rss = _read_kb(f"/proc/{pid}/status", "VmRSS:")
        except (OSError, ValueError):
            continue
        if rss:
            yield pid, rss
        stack.extend(_children(pid))


class TreeSampler(threading.Thread):
    """Samples the process tree under `root`: per-pid peak VmRSS, peak RSS and PSS sums."""

    def __init__(self, root, interval=0.05, pss_every=4):
        super().__init__(daemon=True)
        self.root, self.interval, self.pss_every = root, interval, pss_every
        self.peak_kb = {}
        self.peak_rss_sum_kb = self.peak_pss_sum_kb = 0
        self.done = threading.Event()

    def run(self):
        tick = 0
        while not self.done.is_set():
            total = 0
            for pid, rss in tree_rss_kb(self.root):
                self.peak_kb[pid] = max(self.peak_kb.get(pid, 0), rss)
                total += rss
            self.peak_rss_sum_kb = max(self.peak_rss_sum_kb, total)
            if tick % self.pss_every == 0:
                self.peak_pss_sum_kb = max(self.peak_pss_sum_kb, _tree_memory_kb(self.root)[1])
            tick += 1
            self.done.wait(self.interval)

    def stop(self):
        self.done.set()
        self.join()

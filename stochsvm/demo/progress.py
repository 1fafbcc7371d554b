"""The default demo's progress bar (:class:`ProgressBar`), which forked fits never inherit
in the middle of a redraw."""

from __future__ import annotations

import os
import threading

__all__ = ["ProgressBar"]

# The bar is redrawn every second by a thread, while fits are forked from the main thread. A
# fork taken while that thread writes to stderr would leave the child with stderr's lock held
# forever; this lock is held around every redraw and taken around every fork of the process.
_REDRAW_LOCK = threading.Lock()


def _release_redraw_lock():
    _REDRAW_LOCK.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_REDRAW_LOCK.acquire, after_in_parent=_release_redraw_lock,
                        after_in_child=_release_redraw_lock)


class ProgressBar:
    """A tqdm bar over the demo's steps on stderr, redrawn every second (elapsed time moves
    while a long fit runs). Use as a context manager; ``enabled=False`` draws nothing."""

    def __init__(self, total, enabled=True):
        from tqdm import tqdm

        # miniters=1: every update draws, and tqdm's own monitor thread never redraws
        self.bar = tqdm(total=total, disable=not enabled, leave=False, miniters=1,
                        mininterval=0, dynamic_ncols=True,
                        bar_format="{desc}: {n}/{total} steps |{bar}| {elapsed} elapsed")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._redraw, daemon=True) if enabled else None

    def _redraw(self):
        while not self._stop.wait(1.0):
            with _REDRAW_LOCK:
                self.bar.refresh()

    def __enter__(self):
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exception):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.bar.close()

    def step(self, description=None, done=1):
        """Count ``done`` finished steps and show what runs next."""
        with _REDRAW_LOCK:
            if description is not None:
                self.bar.set_description_str(description, refresh=False)
            self.bar.update(done)

    def set_total(self, total):
        """Change the number of steps (once the comparisons, and so their fits, are known)."""
        with _REDRAW_LOCK:
            self.bar.total = total
            self.bar.refresh()

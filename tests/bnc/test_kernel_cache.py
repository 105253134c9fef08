"""numba's cache under two processes saving different signatures of one kernel at once, and under a
change to a kernel's callee in another file of the package (``key_on_package_source``)."""

import os
import shutil
import subprocess
import sys
import textwrap
import threading

from numba.core.caching import IndexDataCacheFile

import bncbench
import bncbench.bnc  # noqa: F401  (locks the cache's saves)

WAIT = 1.0  # seconds a saver waits for the other to reach the next step of the bad interleaving


class Saver(IndexDataCacheFile):
    """A cache file whose steps wait for events, to force the interleaving of two unlocked saves that
    corrupts the cache: A and B read the index, A writes it, B writes it and its data, A its data."""

    def __init__(self, path, wait_after_reading=None, reading_done=None, wait_before_index=None,
                 index_done=None, wait_before_data=None, data_done=None):
        super().__init__(str(path), "kernel", source_stamp=("stamp",))
        self.wait_after_reading, self.reading_done = wait_after_reading, reading_done
        self.wait_before_index, self.index_done = wait_before_index, index_done
        self.wait_before_data, self.data_done = wait_before_data, data_done

    @staticmethod
    def _step(wait, done, action):
        if wait is not None:
            wait.wait(WAIT)  # under the lock the other saver never comes: go on after WAIT
        result = action()
        if done is not None:
            done.set()
        return result

    def _load_index(self):
        index = super()._load_index()
        return self._step(self.wait_after_reading, self.reading_done, lambda: index)

    def _save_index(self, overloads):
        self._step(self.wait_before_index, self.index_done, lambda: super(Saver, self)._save_index(overloads))

    def _save_data(self, name, data):
        self._step(self.wait_before_data, self.data_done, lambda: super(Saver, self)._save_data(name, data))


def test_two_saves_of_different_signatures_at_once_keep_each_its_own_code(tmp_path):
    b_read, a_indexed, b_saved = threading.Event(), threading.Event(), threading.Event()
    a = Saver(tmp_path, wait_after_reading=b_read, index_done=a_indexed, wait_before_data=b_saved)
    b = Saver(tmp_path, reading_done=b_read, wait_before_index=a_indexed, data_done=b_saved)
    threads = [
        threading.Thread(target=a.save, args=(("int64",), "code for int64")),
        threading.Thread(target=b.save, args=(("int32",), "code for int32")),
    ]
    threads[0].start()
    threads[1].start()
    for thread in threads:
        thread.join()
    reader = IndexDataCacheFile(str(tmp_path), "kernel", source_stamp=("stamp",))
    assert reader.load(("int64",)) == "code for int64"
    assert reader.load(("int32",)) == "code for int32"


def test_the_lock_is_installed_once():
    import bncbench.core.kernel_cache as kernel_cache

    save = IndexDataCacheFile.save
    kernel_cache.lock_cache_saves()
    assert IndexDataCacheFile.save is save and save.saves_under_lock


def _run(root):
    code = "import bncbench.bnc; from bncbench.bnc._probe_caller import call; print(call())"
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_change_in_a_callees_file_recompiles_its_callers(tmp_path):
    package = tmp_path / "bncbench"
    shutil.copytree(os.path.dirname(bncbench.__file__), package, ignore=shutil.ignore_patterns("__pycache__"))
    callee = package / "bnc" / "_probe_callee.py"
    callee.write_text("from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return 1\n")
    (package / "bnc" / "_probe_caller.py").write_text(textwrap.dedent("""
        from numba import njit

        from bncbench.bnc._probe_callee import value


        @njit(cache=True)
        def call():
            return value() * 10
    """))
    assert _run(tmp_path) == "10"
    assert _run(tmp_path) == "10"  # loaded from the cache
    callee.write_text(callee.read_text().replace("return 1", "return 2"))
    assert _run(tmp_path) == "20"  # numba alone keys call() on its own file: it would print 10

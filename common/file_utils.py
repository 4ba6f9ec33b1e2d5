"""File conventions shared by every stage: atomic writes, input globs, hashes.

Atomic writes: an output exists under its final name only once it is
complete. It is written as the hidden sibling ".NAME.incomplete-PID" (which
`*` globs do not match), flushed to disk and renamed at the end; on any error
the temporary file is removed, and `remove_all_temporaries()` removes those
still open (the SIGTERM path of data_gen).

Inputs: `expand_input_patterns` is the one glob expansion of every
`--input_file`-like flag; `open_input` / `input_exists` read local paths and,
through tf.io.gfile (imported only then), SCHEME:// paths such as gs://.
"""
import contextlib
import glob
import hashlib
import json
import os
import posixpath
import threading

SIDECAR_SUFFIX = ".meta.json"  # F.meta.json describes data file F (data_gen.records.metadata)

_live_temporaries = set()


def temporary_path(path):
    """Hidden sibling name used while `path` is being written."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.incomplete-{os.getpid()}")


def remove_all_temporaries():
    """Deletes every temporary file this process still has open (signal/exit path)."""
    for path in list(_live_temporaries):
        try:
            os.remove(path)
        except OSError:
            pass
        _live_temporaries.discard(path)


def make_parent_folder(path):
    """Creates the missing folders above output file `path` (local paths; gs:// has none).
    A part of the path that is a file is left for the writer to name in its error."""
    if is_remote(path):
        return
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        pass


class AtomicFile:
    """A binary file (`handle`) that appears under its final name only after commit().

    make_dirs: create the missing parent directories; otherwise a missing
    directory is a FileNotFoundError naming it. Usable as a context manager
    (commit on success, abort on an exception).
    """

    def __init__(self, path, make_dirs=False):
        self.path = os.path.abspath(path)
        directory = os.path.dirname(self.path)
        if make_dirs:
            os.makedirs(directory, exist_ok=True)
        elif os.path.exists(directory) and not os.path.isdir(directory):
            raise FileNotFoundError(f"{directory} is a file, not a directory (in the output "
                                    f"path {path}); choose another path.")
        elif not os.path.isdir(directory):
            raise FileNotFoundError(f"output directory {directory} does not exist "
                                    f"(for {path}); create it first.")
        self.temporary = temporary_path(self.path)
        _live_temporaries.add(self.temporary)
        try:
            self.handle = open(self.temporary, "wb")
        except BaseException:
            _live_temporaries.discard(self.temporary)
            raise

    def commit(self):
        """Flushes the data to disk and gives the file its final name."""
        if not self.handle.closed:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
        else:  # written through the temporary path by another writer
            with open(self.temporary, "rb") as reader:
                os.fsync(reader.fileno())
        os.replace(self.temporary, self.path)
        _live_temporaries.discard(self.temporary)

    def abort(self):
        """Discards the temporary file."""
        try:
            if not self.handle.closed:
                self.handle.close()
        except OSError:
            pass
        try:
            os.remove(self.temporary)
        except OSError:
            pass
        _live_temporaries.discard(self.temporary)

    def __enter__(self):
        return self

    def __exit__(self, error_type, error, traceback):
        if error_type is None:
            self.commit()
        else:
            self.abort()
        return False


class BackgroundSync:
    """A thread that flushes written data of open files to disk every `seconds`, so
    that the fsync of AtomicFile.commit() finds little left to write.

    files: objects with fileno(); use as a context manager around the writing.
    """

    def __init__(self, files, seconds=0.25):
        self._files = list(files)
        self._seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="background-sync", daemon=True)

    def _run(self):
        while not self._stop.wait(self._seconds):
            for handle in self._files:
                try:
                    os.fdatasync(handle.fileno())
                except (OSError, ValueError):  # closed meanwhile, or not syncable: commit() says
                    pass

    def __enter__(self):
        if hasattr(os, "fdatasync"):
            self._thread.start()
        return self

    def __exit__(self, *unused):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return False


@contextlib.contextmanager
def atomic_output(path):
    """Yields a temporary path for any writer (e.g. tf.io.TFRecordWriter); renames it to
    `path` if the block succeeds, removes it otherwise. Parent directories are created."""
    atomic = AtomicFile(path, make_dirs=True)
    atomic.handle.close()
    try:
        yield atomic.temporary
    except BaseException:
        atomic.abort()
        raise
    try:
        atomic.commit()
    except BaseException:
        atomic.abort()
        raise


def write_text_atomically(path, lines):
    """Writes an iterable of lines (each without its newline), UTF-8, "\\n" line ends. A
    SCHEME:// path (gs://) is written under a hidden sibling name through tf.io.gfile and
    renamed when whole."""
    if is_remote(path):
        directory, name = posixpath.split(path)
        temporary = posixpath.join(directory, f".{name}.incomplete-{os.getpid()}")
        gfile = _gfile()
        try:
            with gfile.GFile(temporary, "w") as writer:
                for line in lines:
                    writer.write(line + "\n")
            gfile.rename(temporary, path, overwrite=True)
        except BaseException:
            if gfile.exists(temporary):
                gfile.remove(temporary)
            raise
        return
    with AtomicFile(path, make_dirs=True) as atomic:
        for line in lines:
            atomic.handle.write((line + "\n").encode("utf-8"))


def write_json_atomically(path, obj):
    """Writes `obj` as indented UTF-8 JSON with sorted keys."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    with AtomicFile(path, make_dirs=True) as atomic:
        atomic.handle.write(text.encode("utf-8"))


def file_sha256(path):
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as reader:
        for block in iter(lambda: reader.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_remote(path):
    """True for SCHEME://... paths (gs://, ram://, ...), which tf.io.gfile serves."""
    return "://" in str(path)


def _gfile():
    import tensorflow as tf  # only for remote paths: data_gen itself needs no TensorFlow
    return tf.io.gfile


def open_input(path, mode="rb"):
    """Opens a local or remote file for reading."""
    if is_remote(path):
        return _gfile().GFile(path, mode)
    return open(path, mode) if "b" in mode else open(path, mode, encoding="utf-8")


def open_binary_input(path):
    """open_input(path, "rb"): a seekable binary file, local or remote."""
    return open_input(path, "rb")


def input_size(path):
    """The size in bytes of a local or remote file."""
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def input_exists(path):
    """True if the local or remote file exists."""
    return _gfile().exists(path) if is_remote(path) else os.path.isfile(path)


def _glob(pattern):
    """Files matching one pattern, hidden names only when the pattern asks for them."""
    if not is_remote(pattern):
        return [path for path in glob.glob(os.path.expanduser(pattern)) if os.path.isfile(path)]
    gfile = _gfile()
    hidden = posixpath.basename(pattern).startswith(".")
    return [path for path in gfile.glob(pattern) if not gfile.isdir(path)
            and (hidden or not posixpath.basename(path).startswith("."))]


def missing_file_message(flag, path, usual_name=None):
    """The error for file flag `flag`=`path` that names no file: a folder says which file
    inside it to pass (`usual_name`, e.g. vocab.txt, when it is there)."""
    if os.path.isdir(path):
        inside = os.path.join(path, usual_name) if usual_name else None
        if inside and os.path.isfile(inside):
            return f"{flag}={path} is a folder: pass the file inside it, {flag}={inside}"
        return f"{flag}={path} is a folder, not a file: pass a file"
    return f"{flag}={path}: file not found"


def expand_input_patterns(patterns, flag="--input_file", error=ValueError, glob_files=None):
    """Sorted, de-duplicated files of comma-separated globs (a str or a list of them).

    `*.meta.json` sidecars and directories are never inputs; hidden files only
    when the pattern names them (so files being written are not read). A
    pattern matching nothing raises `error` naming `flag` and the pattern.
    glob_files(pattern) lists the files of one pattern (default: local glob,
    tf.io.gfile for SCHEME:// paths; Beam passes its FileSystems.match).
    """
    glob_files = glob_files or _glob
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    files = []
    seen = set()
    for pattern in [p.strip() for p in patterns if p and p.strip()]:
        matches = sorted(path for path in glob_files(pattern)
                         if not path.endswith(SIDECAR_SUFFIX))
        if not matches and not is_remote(pattern) and os.path.isdir(pattern):
            raise error(f"{flag}={pattern} is a folder: pass its files, e.g. "
                        f"{flag}='{os.path.join(pattern, '*.txt')}'")
        if not matches:
            raise error(f"{flag} pattern {pattern!r} matches no file (cwd {os.getcwd()}; "
                        f"*{SIDECAR_SUFFIX} sidecars are not inputs); check the path or quote "
                        "the glob.")
        for path in matches:
            if path not in seen:
                seen.add(path)
                files.append(path)
    if not files:
        raise error(f"{flag} is empty; give one or more comma-separated files or globs.")
    return files

"""Small file helpers shared by every stage: atomic writes and content hashes.

An output written through `atomic_output(path)` exists under its final name
only once it is complete: it is written as the hidden sibling
".NAME.incomplete-PID" (which `*` globs do not match) and renamed at the end;
on any error the temporary file is removed.
"""
import contextlib
import hashlib
import json
import os


def temporary_path(path):
    """Hidden sibling name used while `path` is being written."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.incomplete-{os.getpid()}")


@contextlib.contextmanager
def atomic_output(path):
    """Yields a temporary path to write; renames it to `path` if the block succeeds."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = temporary_path(path)
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_text_atomically(path, lines):
    """Writes an iterable of lines (each without its newline), UTF-8, "\\n" line ends."""
    with atomic_output(path) as temporary:
        with open(temporary, "w", encoding="utf-8", newline="\n") as writer:
            for line in lines:
                writer.write(line + "\n")


def write_json_atomically(path, obj):
    """Writes `obj` as indented UTF-8 JSON with sorted keys."""
    with atomic_output(path) as temporary:
        with open(temporary, "w", encoding="utf-8") as writer:
            writer.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def file_sha256(path):
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as reader:
        for block in iter(lambda: reader.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

"""The disk cache of compiled artifacts.

Layout: `<dir>/<key>/` holds the entry's files plus `meta.json`, which records the
sha256 and size of every file and the caller's metadata. An entry appears by atomic
rename of a fully written temporary directory (`<dir>/.tmp-*`), so readers see a whole
entry or none; `lookup` re-checks every checksum and removes an entry that does not
match (truncated, corrupted, half-deleted), so a corrupt entry is never served.
Concurrent writers of one key both succeed: the first rename wins, the other keeps it.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import time

META = "meta.json"
FORMAT = 1
_KEY_RE = re.compile(r"^[0-9A-Za-z_-]{1,128}$")
_TMP_PREFIX = ".tmp-"
_TRASH_PREFIX = ".trash-"


def default_dir() -> str:
    return os.environ.get("TILELANG_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "tilelang")


def disabled_by_env() -> bool:
    return os.environ.get("TILELANG_DISABLE_CACHE", "").strip().lower() in (
        "1", "true", "yes", "on")


def key(*parts) -> str:
    """sha256 over the parts (str, bytes, numbers, None, and lists / dicts of them).
    Each part is type-tagged and length-prefixed, so ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        data = _encode(part)
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _encode(part) -> bytes:
    if isinstance(part, bytes):
        return b"b" + part
    if isinstance(part, str):
        return b"s" + part.encode("utf-8")
    try:
        return b"j" + json.dumps(part, sort_keys=True, separators=(",", ":")).encode()
    except TypeError:
        raise TypeError(f"cache key parts must be str, bytes, numbers, None, or lists / "
                        f"dicts of them; got {type(part).__name__}") from None


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Cache:
    """`Cache(dir=None)`: the cache rooted at `dir` (default `TILELANG_CACHE_DIR`, else
    `~/.cache/tilelang`). With `TILELANG_DISABLE_CACHE=1` (or `enabled=False`) `lookup`
    always misses and `store` writes nothing and returns None."""

    key = staticmethod(key)

    def __init__(self, dir: str | os.PathLike | None = None, enabled: bool | None = None):
        self.dir = os.fspath(dir) if dir is not None else default_dir()
        self.enabled = (not disabled_by_env()) if enabled is None else bool(enabled)

    def __repr__(self) -> str:
        return f"<tilelang.Cache {self.dir}{'' if self.enabled else ' (disabled)'}>"

    def entry_dir(self, key: str) -> str:
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise ValueError(f"bad cache key {key!r}: expected 1-128 characters of "
                             f"[0-9A-Za-z_-] (use Cache.key(...))")
        return os.path.join(self.dir, key)

    # -- lookup ---------------------------------------------------------------------------

    def lookup(self, key: str) -> str | None:
        """The entry directory of `key` when present and intact, else None (a corrupt
        entry is removed first)."""
        if not self.enabled:
            return None
        entry = self.entry_dir(key)
        if not os.path.isdir(entry):
            return None
        if self._verify(entry, key):
            return entry
        self._discard(entry)
        return None

    def meta(self, key: str) -> dict | None:
        """The metadata stored with an intact entry, or None."""
        entry = self.lookup(key)
        if entry is None:
            return None
        with open(os.path.join(entry, META), encoding="utf-8") as f:
            return json.load(f).get("meta", {})

    def _verify(self, entry: str, key: str) -> bool:
        try:
            with open(os.path.join(entry, META), encoding="utf-8") as f:
                record = json.load(f)
            if record.get("format") != FORMAT or record.get("key") != key:
                return False
            files = record["files"]
            for name, info in files.items():
                path = os.path.join(entry, name)
                if os.path.getsize(path) != info["size"] or _sha256_file(path) != info["sha256"]:
                    return False
            return True
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return False

    def _discard(self, entry: str) -> OSError | None:
        """Move a bad entry out of the way atomically, then delete it; a concurrent
        reader either still sees the whole old directory or no entry at all. Returns
        the error when the entry is still there (a read-only cache), else None."""
        trash = os.path.join(self.dir, f"{_TRASH_PREFIX}{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.rename(entry, trash)
        except FileNotFoundError:
            return None               # someone else removed it already
        except OSError as e:
            return e if os.path.lexists(entry) else None
        shutil.rmtree(trash, ignore_errors=True)
        return None

    # -- store ----------------------------------------------------------------------------

    def store(self, key: str, files: dict, meta: dict | None = None) -> str | None:
        """Write an entry: `files` maps a file name to its bytes, or to the path of a file
        to copy. Returns the entry directory (another process's, if it stored the same
        key first). Nothing half-written is ever left behind."""
        if not self.enabled:
            return None
        entry = self.entry_dir(key)
        names = list(files)
        for name in names:
            _check_name(name)
        try:
            os.makedirs(self.dir, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=self.dir)
        except OSError as e:
            raise OSError(e.errno, f"cannot write to the tilelang cache directory {self.dir} "
                          f"({e.strerror}); set TILELANG_CACHE_DIR to a writeable directory "
                          f"or TILELANG_DISABLE_CACHE=1") from None
        try:
            record = {"format": FORMAT, "key": key, "created": time.time(),
                      "meta": meta or {}, "files": {}}
            for name in names:
                record["files"][name] = _write_file(os.path.join(tmp, name), files[name])
            with open(os.path.join(tmp, META), "w", encoding="utf-8") as f:
                json.dump(record, f)
            os.chmod(tmp, 0o755)
            return self._publish(tmp, entry, key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)     # gone already when published

    def _publish(self, tmp: str, entry: str, key: str) -> str:
        for _ in range(5):
            try:
                os.rename(tmp, entry)
                return entry
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
            # Someone else stored this key: keep theirs if intact, else replace it
            # (a verify that fails because it vanished meanwhile just retries).
            if self._verify(entry, key):
                return entry
            self._discard(entry)
        raise OSError(f"could not store cache entry {entry}: it keeps being replaced")

    # -- maintenance ----------------------------------------------------------------------

    def entries(self) -> list[str]:
        """Keys of the entries present (not verified)."""
        try:
            names = os.listdir(self.dir)
        except OSError:
            return []
        return sorted(n for n in names if _KEY_RE.match(n)
                      and os.path.isfile(os.path.join(self.dir, n, META)))

    def info(self) -> dict:
        """`{"dir", "entries", "bytes", "enabled"}`; bytes counts everything under dir."""
        total = 0
        for root, _, names in os.walk(self.dir):
            for n in names:
                try:
                    total += os.path.getsize(os.path.join(root, n))
                except OSError:
                    pass
        return {"dir": self.dir, "entries": len(self.entries()), "bytes": total,
                "enabled": self.enabled}

    def clear(self) -> int:
        """Remove every entry (and leftovers of interrupted writes); returns how many
        entries were removed. Entries that cannot be removed (a read-only cache) raise
        `CacheClearError` once the others are gone."""
        removed, errors = 0, []
        for k in self.entries():
            error = self._discard(os.path.join(self.dir, k))
            if error is None:
                removed += 1
            else:
                errors.append(error)
        try:
            leftovers = [n for n in os.listdir(self.dir)
                         if n.startswith((_TMP_PREFIX, _TRASH_PREFIX))]
        except OSError:
            leftovers = []
        for n in leftovers:
            shutil.rmtree(os.path.join(self.dir, n), ignore_errors=True)
        if errors:
            raise CacheClearError(self.dir, removed, errors)
        return removed


class CacheClearError(OSError):
    """`Cache.clear` could not remove some entries: `.removed` were removed, `.remaining`
    are still there, `.reason` says why (e.g. "Permission denied")."""

    def __init__(self, directory: str, removed: int, errors: list):
        self.removed, self.remaining = removed, len(errors)
        self.reason = errors[0].strerror or str(errors[0])
        super().__init__(errors[0].errno, f"could not remove {self.remaining} cache "
                         f"entr{'y' if self.remaining == 1 else 'ies'} of {directory} "
                         f"({self.reason}); removed {removed}")


def _check_name(name) -> None:
    if (not isinstance(name, str) or not name or name == META or name.startswith(".")
            or "/" in name or "\\" in name or "\0" in name):
        raise ValueError(f"bad cache file name {name!r}: a plain file name other than "
                         f"{META!r}, not starting with '.'")


def _write_file(path: str, content) -> dict:
    """Write `content` (bytes, or a path to copy) and return its size and sha256."""
    if isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
        with open(path, "wb") as f:
            f.write(data)
        return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if isinstance(content, (str, os.PathLike)):
        shutil.copyfile(content, path)
        return {"size": os.path.getsize(path), "sha256": _sha256_file(path)}
    raise TypeError(f"cache file {os.path.basename(path)!r}: expected bytes or a file path, "
                    f"got {type(content).__name__}")


def atomic_write(path: str, data: bytes, mode: int = 0o644, make_dirs: bool = True) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one, never
    a torn write, and a process killed meanwhile leaves nothing behind: the bytes go to
    an anonymous file in the destination's directory (Linux `O_TMPFILE`), which gets a
    name only when complete and is renamed into place at once (elsewhere: a named temp
    file, then rename). User outputs pass `make_dirs=False`: like any compiler,
    `-o missing/dir/x.o` is an error."""
    directory = os.path.dirname(os.path.abspath(path))
    if make_dirs:
        os.makedirs(directory, exist_ok=True)
    tmp = _write_anonymous(directory, os.path.basename(path), data, mode)
    if tmp is None:
        tmp = _write_named(directory, os.path.basename(path), data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _write_anonymous(directory: str, name: str, data: bytes, mode: int) -> str | None:
    """`data` in an unnamed file of `directory`, then linked under a temporary name
    (returned); None where the system or file system has no O_TMPFILE."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None:
        return None
    try:
        fd = os.open(directory, flag | os.O_WRONLY, mode)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None             # no O_TMPFILE here (ENOENT: a kernel without it)
        raise
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
        tmp = os.path.join(directory, f".tmp-{os.getpid()}-{os.urandom(4).hex()}-{name}")
        try:
            os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
        except OSError:
            return None             # no /proc: fall back to a named temporary file
        return tmp
    finally:
        os.close(fd)


def _write_named(directory: str, name: str, data: bytes, mode: int) -> str:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)        # mkstemp makes 0600; outputs should look like any file
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass

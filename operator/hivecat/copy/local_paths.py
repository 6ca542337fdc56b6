"""Local paths opened without following a symbolic link anywhere in them.

A unit's root comes from a plan (a table's location in a catalog), so it may be, or pass through, a link:
in a pod, `/var/run/secrets/kubernetes.io/serviceaccount/..data` is a link to a timestamped directory that
holds the service account's token. Followed, such a root copies whatever the link points to. So every local
access to a unit's root and below goes through here, and a path with a link in any component is refused
(LinkRefused, naming the link), never resolved.

There is no check-then-use: a check that a path holds no link races a link swapped in after it. On Linux 5.6
and later one openat2(2) with RESOLVE_NO_SYMLINKS resolves a whole path and refuses at the first link. Where
the kernel (or a seccomp filter) refuses openat2, each component is opened with O_NOFOLLOW relative to its
parent's descriptor instead: more system calls, the same refusals. Other operations (mkdir, rename, unlink,
rmtree) act on a name relative to a parent directory opened this way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
_SYS_OPENAT2 = 437  # the same number on every architecture listed below (the unified syscall table)
_OPENAT2_MACHINES = frozenset({"x86_64", "aarch64", "arm64", "armv7l", "armv6l", "riscv64", "ppc64le", "ppc64",
                               "s390x", "i386", "i686", "loongarch64"})
_RESOLVE_NO_SYMLINKS = 0x04


class LinkRefused(OSError):
    """A path that is, or passes through, a symbolic link at `link` (a path prefix, or the path itself)."""

    def __init__(self, path: str, link: str) -> None:
        super().__init__(errno.ELOOP, f"passes through a symbolic link at {link}; links are never followed", path)
        self.link = link

    def __reduce__(self):  # OSError's own pickling would call __init__ with (errno, strerror, filename)
        return LinkRefused, (self.filename, self.link)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_syscall = None
_openat2_works: bool | None = None  # None: not tried yet
_hows: dict[tuple[int, int], _OpenHow] = {}  # read-only once made: shared by threads, one per (flags, mode)


def _openat2(path: str, flags: int, mode: int) -> int:
    """openat2(AT_FDCWD, path, {flags, mode, RESOLVE_NO_SYMLINKS}); OSError as os.open raises it."""
    global _syscall
    if _syscall is None:
        function = ctypes.CDLL(None, use_errno=True).syscall
        function.restype = ctypes.c_long
        function.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
        _syscall = function
    mode = mode if flags & os.O_CREAT else 0  # else EINVAL
    how = _hows.get((flags, mode))
    if how is None:
        how = _hows.setdefault((flags, mode), _OpenHow(flags, mode, _RESOLVE_NO_SYMLINKS))
    encoded = os.fsencode(path)
    while True:
        fd = _syscall(_SYS_OPENAT2, _AT_FDCWD, encoded, ctypes.addressof(how), ctypes.sizeof(_OpenHow))
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code != errno.EINTR:
            raise OSError(code, os.strerror(code), path)


def _openat2_usable() -> bool:
    """Whether this kernel answers openat2 (tried once: ENOSYS before 5.6, EPERM under some seccomp filters)."""
    global _openat2_works
    if _openat2_works is None:
        works = sys.platform == "linux" and platform.machine() in _OPENAT2_MACHINES
        if works:
            try:
                os.close(_openat2("/", _O_PATH | os.O_CLOEXEC, 0))
            except OSError:
                works = False
        _openat2_works = works
    return _openat2_works


def _names(path: str) -> list[str]:
    if not path.startswith("/"):
        raise ValueError(f"not an absolute path: {path!r}")
    return [name for name in path.split("/") if name]


def first_link(path: str) -> str | None:
    """The first prefix of `path` that is a symbolic link now (lstat, one component at a time): only to name
    the link in a refusal, after a no-follow open has refused the path."""
    current = ""
    for name in _names(path):
        current += "/" + name
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return current
        except OSError:
            return None
    return None


def _refused(exc: OSError, path: str, dir_fd: int | None = None, name: str = "", component: str = "") -> OSError:
    """LinkRefused when `exc` is what a no-follow open answers for a link (ELOOP; ENOTDIR with O_DIRECTORY),
    else `exc` itself."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
        return exc
    if dir_fd is not None:  # the walk knows which component it opened
        try:
            if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return LinkRefused(path, component)
        except OSError:
            pass
        return exc
    if exc.errno == errno.ELOOP:  # openat2 met a link; name the first one there is
        return LinkRefused(path, first_link(path) or path)
    return exc


def _descend(fd: int, path: str, names: list[str], depth: int) -> int:
    """The directory names[depth - 1] opened below `fd` without following it (LinkRefused naming it); `fd` is
    closed once the child is open (on a refusal, the caller's `finally` closes it)."""
    name = names[depth - 1]
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _refused(exc, path, fd, name, "/" + "/".join(names[:depth])) from None
    os.close(fd)
    return child


def _walk_open(path: str, flags: int, mode: int) -> int:
    """The fallback: each directory opened with O_NOFOLLOW relative to its parent's descriptor."""
    names = _names(path)
    fd = os.open("/", _DIR_FLAGS)
    try:
        if not names:
            return os.open(".", flags, mode, dir_fd=fd)
        for depth in range(1, len(names)):
            fd = _descend(fd, path, names, depth)
        try:
            opened = os.open(names[-1], flags | os.O_NOFOLLOW, mode, dir_fd=fd)
        except OSError as exc:
            raise _refused(exc, path, fd, names[-1], path) from None
        if flags & _O_PATH == _O_PATH and stat.S_ISLNK(os.fstat(opened).st_mode):  # O_PATH|O_NOFOLLOW: the link
            os.close(opened)
            raise LinkRefused(path, path)
        return opened
    finally:
        os.close(fd)


def open_path(path: str, flags: int, mode: int = 0o666) -> int:
    """A descriptor for the absolute `path` opened with `flags`, no link followed in any component (the last
    included): LinkRefused for a link, else the OSError os.open raises."""
    if not path.startswith("/"):  # openat2 would take it from the working directory, the walk from the root
        raise ValueError(f"not an absolute path: {path!r}")
    flags |= os.O_CLOEXEC
    if _openat2_usable():
        try:
            return _openat2(path, flags, mode)
        except OSError as exc:
            if exc.errno != errno.EAGAIN:  # EAGAIN: a resolution race the kernel would not decide; walk it
                raise _refused(exc, path) from None
    return _walk_open(path, flags, mode)


def open_dir(path: str) -> int:
    return open_path(path, os.O_RDONLY | os.O_DIRECTORY)


def stat_path(path: str) -> os.stat_result:
    """The path's own stat; a link anywhere in it, itself included, is LinkRefused."""
    fd = open_path(path, _O_PATH)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def make_dirs(path: str, mode: int = 0o777) -> None:
    """mkdir -p, creating each missing directory in its parent's descriptor, following no link. The parent is
    tried first: a unit's staging directory is made in a staging root that exists, with one mkdir rather than a
    walk from the root (a dozen system calls a unit)."""
    try:
        os.close(open_dir(path))
        return
    except FileNotFoundError:
        pass
    if _make_in_parent(path, mode):
        return
    names = _names(path)
    fd = os.open("/", _DIR_FLAGS)
    try:
        for depth, name in enumerate(names, 1):
            try:
                os.mkdir(name, mode, dir_fd=fd)
            except FileExistsError:
                pass
            fd = _descend(fd, path, names, depth)
    finally:
        os.close(fd)


def _make_in_parent(path: str, mode: int) -> bool:
    """Whether the directory was made in its existing parent (opened as open_dir opens it); False when the
    parent is missing too, or the name was taken meanwhile (the walk then says what took it)."""
    parent, name = os.path.split(path.rstrip("/"))
    if not parent or not name:
        return False
    try:
        fd = open_dir(parent)
    except FileNotFoundError:
        return False
    try:
        os.mkdir(name, mode, dir_fd=fd)
    except FileExistsError:
        return False
    finally:
        os.close(fd)
    return True


def create_file(path: str, flags: int = os.O_WRONLY | os.O_TRUNC, mode: int = 0o666) -> int:
    """A file opened for writing (O_CREAT added), its missing parent directories made first when needed."""
    try:
        return open_path(path, flags | os.O_CREAT, mode)
    except FileNotFoundError:
        make_dirs(os.path.dirname(path))
        return open_path(path, flags | os.O_CREAT, mode)


@contextmanager
def parent_of(path: str, make: bool = False) -> Iterator[tuple[int, str]]:
    """(a descriptor of the path's parent directory, the path's last name): to act on the name itself. With
    `make`, a missing parent is made first."""
    parent, name = os.path.split(path.rstrip("/"))
    if not name:
        raise ValueError(f"{path!r} has no parent directory")
    try:
        fd = open_dir(parent or "/")
    except FileNotFoundError:
        if not make:
            raise
        make_dirs(parent)
        fd = open_dir(parent)
    try:
        yield fd, name
    finally:
        os.close(fd)


def rename(source: str, target: str) -> None:
    """rename(2) of the names themselves (never followed), in parents reached without a link."""
    with parent_of(source) as (source_dir, source_name), parent_of(target) as (target_dir, target_name):
        os.rename(source_name, target_name, src_dir_fd=source_dir, dst_dir_fd=target_dir)


def exchange(a: str, b: str) -> bool:
    """Swap two paths atomically (renameat2 RENAME_EXCHANGE); False when this kernel, libc or filesystem cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    with parent_of(a) as (a_dir, a_name), parent_of(b) as (b_dir, b_name):
        if renameat2(a_dir, os.fsencode(a_name), b_dir, os.fsencode(b_name), _RENAME_EXCHANGE) == 0:
            return True
        code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, f"cannot swap {a} and {b}: {os.strerror(code)}")


def remove_tree(path: str) -> None:
    """rm -r of a directory; shutil's descriptor-based walk never follows a link below it either."""
    with parent_of(path) as (fd, name):
        shutil.rmtree(name, dir_fd=fd)


def remove_file(path: str) -> None:
    with parent_of(path) as (fd, name):
        os.unlink(name, dir_fd=fd)

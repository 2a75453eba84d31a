"""Writing a file over another: through a temporary file in the same folder and a rename.

Every file flock3d writes (scenes, recordings, videos, images, tables, plots, cache entries)
goes this way, so that a write that fails (a full disk, ``ulimit -f``, Ctrl-C) leaves the file
that was there whole, or no file, never part of one, and a reader never sees half a file.

The temporary file is ``.NAME.XXXXXXXX.tmp.SUFFIX`` beside the target: on the same file
system, so that the rename is atomic, and ending in the target's suffix, so that writers that
choose a format by the file name (ffmpeg, matplotlib, imageio) choose the target's. It is
removed when the write fails; only a process killed outright (SIGKILL, a power cut) leaves one.

This module is in the core because the core's cache of assembled steps writes files too; it
depends on nothing but the standard library.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["AtomicFile", "atomic_write", "left_behind"]

#: Longest part of the target's name kept in the temporary file's, in UTF-8 bytes (the file
#: system's limit, 255, counts bytes): a name near the limit must leave room for the marks.
_NAME_KEPT = 180


def _temporary_parts(target: Path) -> tuple[str, str]:
    """What a temporary file of ``target`` is named before and after its 8 hex digits:
    ``.NAME.`` and ``.tmp.SUFFIX``."""
    name = os.fsencode(target.name)[:_NAME_KEPT].decode(errors="ignore")  # whole characters
    return f".{name}.", f".tmp{target.suffix[:16]}"


def left_behind(path: str | Path) -> list[Path]:
    """The temporary files of ``path`` that writers killed outright left beside it, newest first."""
    target = Path(path)
    head, tail = _temporary_parts(target)
    found = []
    with contextlib.suppress(OSError), os.scandir(target.parent) as entries:
        for entry in entries:
            token = entry.name[len(head) : len(entry.name) - len(tail)]
            if entry.name.startswith(head) and entry.name.endswith(tail) and len(token) == 8:
                with contextlib.suppress(OSError):
                    found.append((entry.stat().st_mtime, Path(entry.path)))
    return [p for _, p in sorted(found, reverse=True)]


class AtomicFile:
    """A new version of ``path``, written at :attr:`temp` and renamed over ``path`` by :meth:`commit`.

    A symbolic link is followed: the file it points to is replaced and the link kept. A path that
    exists but is not a regular file (``/dev/null``, a FIFO) cannot be replaced, only written:
    :attr:`temp` is then ``path`` itself and commit and discard do nothing. The new file takes
    the old one's permissions, or the usual ones (``0o666`` less the umask) when there was none.

    As a context manager it commits when its block ends normally and discards when it raises
    (an :class:`OSError` raised there is raised again naming ``path``, not the temporary file).

    Args:
        path: the file to write.

    Raises:
        OSError: the folder cannot take a new file, or ``path`` exists and may not be written
            (its ``filename`` is ``path``).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._target = Path(os.path.realpath(self.path))
        self._done = False
        try:
            status = os.stat(self._target)
        except FileNotFoundError:
            status = None
        self.existed = status is not None
        """Whether a file was there to be replaced."""
        self._mode = None if status is None else stat.S_IMODE(status.st_mode)
        self._in_place = status is not None and not stat.S_ISREG(status.st_mode)
        if self._in_place:
            self.temp = self.path
            return
        if status is not None and not os.access(self._target, os.W_OK):  # read-only: not ours to replace
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self.path))
        head, tail = _temporary_parts(self._target)
        self.temp = self._target.with_name(f"{head}{secrets.token_hex(4)}{tail}")
        try:  # created here, exclusively: the name is this writer's, with the umask's permissions
            os.close(os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except OSError as error:
            raise OSError(error.errno, error.strerror, str(self.path)) from None

    def commit(self) -> Path:
        """Put the new file in place of the old one (once); on failure the old one stays.
        Returns ``path``.

        The new file is flushed to the disk first: a file system that allocates late reports a
        full disk there, while the old file is still in place.
        """
        if self._done:
            return self.path
        self._done = True
        if self._in_place:
            return self.path
        try:
            _synced(self.temp)
            if self._mode is not None:
                os.chmod(self.temp, self._mode)
            os.replace(self.temp, self._target)
        except OSError as error:
            self._remove()
            raise OSError(error.errno, error.strerror, str(self.path)) from None
        with contextlib.suppress(OSError):  # the rename itself reaches the disk (best effort)
            folder = os.open(self._target.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        return self.path

    def commit_beside(self, label: str) -> Path:
        """Put the new file beside the old one, which is left as it was: at the first free name
        of ``STEM.LABEL.SUFFIX``, ``STEM.LABEL-2.SUFFIX``, ... in its folder, never replacing a
        file (a hard link made there, which fails where the name is taken). Where no file was,
        :meth:`commit`. Returns where the new file is (once).

        Raises:
            OSError: the file cannot be put in place (the new file is dropped); its ``filename``
                is ``path``.
        """
        if not self.existed or self._in_place:
            return self.commit()
        if self._done:
            raise ValueError("commit_beside after the file was committed or discarded")
        self._done = True
        stem, suffix = self._target.stem, self._target.suffix
        try:
            _synced(self.temp)
            for n in itertools.count(1):
                beside = self._target.with_name(f"{stem}.{label}{'' if n == 1 else f'-{n}'}{suffix}")
                try:
                    os.link(self.temp, beside)
                except FileExistsError:
                    continue
                except OSError as error:  # a file system without hard links: renamed where free
                    if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP) or beside.exists():
                        raise
                    os.rename(self.temp, beside)
                    return beside
                self._remove()
                return beside
        except OSError as error:
            self._remove()
            raise OSError(error.errno, error.strerror, str(self.path)) from None

    def discard(self) -> None:
        """Drop the new file (once); the old one, if any, is left as it was."""
        if self._done:
            return
        self._done = True
        if not self._in_place:
            self._remove()

    def _remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temp)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if kind is None:
            self.commit()
            return
        self.discard()
        if isinstance(error, OSError) and error.filename in (None, str(self.temp)):
            raise OSError(error.errno, error.strerror, str(self.path)) from None


def _synced(path: Path) -> None:
    """Flush ``path`` to the disk: a file system that allocates late reports a full disk here."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """``open(path, mode, **kwargs)`` for writing, through an :class:`AtomicFile`: ``path`` is
    replaced when the block ends normally and left as it was when it raises.

    Args:
        path: the file to write.
        mode: ``"w"`` or ``"wb"`` (with ``t`` or ``+`` as ``open`` takes them).
    """
    if not mode.startswith("w"):
        raise ValueError(f"atomic_write writes a whole file: mode must start with 'w' (got {mode!r})")
    with AtomicFile(path) as file, open(file.temp, mode, **kwargs) as handle:
        yield handle

"""The one path by which the package writes files: claimed, checked, written aside, renamed.

Every output (run files, their partial replacements, figures, comparisons,
limit studies, sweeps) goes through this module:

* **Claim** (:func:`hold`): an exclusive ``fcntl.flock`` on a lock file
  ``.NAME.lock`` next to the output NAME, held for the whole run of the
  process that writes NAME (creation, ``--overwrite``, ``--resume``). A
  second writer is refused with a :class:`~meanfield_pde.core.errors.ConfigError`
  naming the holder (pid, command, start time, read from the lock file).
  A run's partial replacement ``X.partial.nc`` is claimed under its final
  name ``X.nc``. The lock is re-entrant within a process (one flock per
  name, counted), and is released when the process ends, however it ends.
  The lock file is opened without following a link (:func:`open_plain`):
  a symbolic link, a hard link or a special file planted at its name (in a
  shared folder, by someone else) is refused, never written through.
* **Claim of the file itself** (:func:`hold_file`): a name is not the file. A
  process that writes a file in place (a run from its first snapshot on,
  ``--resume``, ``--drop-damaged``) also holds an exclusive ``fcntl.flock``
  on a descriptor of the data file, i.e. on its inode, so that a second
  writer through another name of it (a hard link, a bind-mounted path) is
  refused too. flock belongs to the open file description: the netCDF
  library opening and closing its own descriptors of the file does not
  release it (POSIX ``fcntl``/``lockf`` locks would be), nor does renaming
  the file; readers are not blocked (flock is advisory and netCDF-C and
  xarray take none on a netCDF-3 file). It is not passed on to a forked
  child (released there at the fork; the parent keeps it).
* **Check** (:func:`check_output`): an existing output is refused unless
  ``overwrite``; an output that is one of the command's inputs is always
  refused; special files and folders are refused.
* **Write** (:func:`write_file`): into a temporary file ``.NAME.<random>.tmp``
  in the same folder, then ``os.replace``: readers see the old file or the
  whole new one. The temporary file is a new one (mkstemp's O_EXCL: never
  through a link) and the rename replaces a symbolic link itself, never
  writing through it into its target. A temporary file left by a killed process is
  deleted by the next process that claims a name in that folder, and only
  if nobody holds its output's lock (its writer is dead).
* **Room** (:func:`check_room`): writes that would exceed the free disk space
  or the process's file-size limit (``ulimit -f``, RLIMIT_FSIZE) are not
  attempted; they, and writes failing with ENOSPC, EDQUOT or EFBIG, raise
  :class:`OutputFull`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import resource
import shlex
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..core.errors import ConfigError, printable

TMP_MARK = ".meanfield-tmp-"  # between the output's name and mkstemp's random part
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
RETRIES = 3
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"  # the first bytes of a netCDF-4 file (see acquire_file)
LEGACY_AGE = 3600.0  # seconds


class OutputFull(OSError):
    """The disk, the quota or the file-size limit cannot take a write (the CLI exits with 3)."""


def shell_word(path: str | os.PathLike) -> str:
    """``path`` as one shell word that the command line reads as a file name (for the commands
    that messages and notes tell the user to run): quoted where the shell needs it, and a
    relative name starting with "-" as ./NAME (else argparse reads it as an option). A name
    with a control character (a newline, ESC) is written in ANSI-C quotes, $'a\\nb', which bash,
    zsh and POSIX sh (2024) read back as the name and which print as plain text: inside
    shlex's single quotes the character itself would reach the terminal."""
    name = os.fspath(path)
    name = os.path.join(".", name) if name.startswith("-") else name
    if printable(name) == name:
        return shlex.quote(name)
    return "$'" + "".join(_ansi_c(ch) for ch in name) + "'"


def _ansi_c(ch: str) -> str:
    """One character inside $'...': a backslash or quote escaped; a character that
    :func:`~meanfield_pde.core.errors.printable` escapes as \\xHH (ASCII, and the bytes of a
    name that is not UTF-8, which Python holds as the surrogates U+DC80..U+DCFF) or \\UHHHHHHHH
    (written in the locale's encoding, UTF-8 for these names); any other as itself."""
    if ch in "\\'":
        return "\\" + ch
    if printable(ch) == ch:
        return ch
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape: the byte itself
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x80 else f"\\U{code:08x}"


# -- claims ---------------------------------------------------------------------------------------

_held: dict[str, list] = {}  # lock-file path -> [descriptor, count]
_guard = threading.Lock()


def final_name(path: str | os.PathLike) -> Path:
    """The output a path stands for: ``X.partial.nc`` (a replacement in progress) is claimed as ``X.nc``."""
    path = Path(path)
    if path.name.endswith(".partial.nc"):
        return path.with_name(path.name[:-len(".partial.nc")] + ".nc")
    return path


def lock_path(path: str | os.PathLike) -> Path:
    """``.NAME.lock`` in the output's folder (the folder's own links resolved, not the name's)."""
    path = final_name(path)
    return Path(os.path.realpath(path.parent if str(path.parent) else ".")) / f".{path.name}.lock"


def _holder_text() -> str:
    command = " ".join(sys.argv) if sys.argv and sys.argv[0] else "python"
    command = "".join(c if c.isprintable() else repr(c)[1:-1] for c in command)[:300]
    return (f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, "
            f"command: {command}")


class NotOurs(OSError):
    """A name where the package makes its own files (a lock file, a run's partial file) holds
    something else: a symbolic link, a special file or a file with other names (hard links).
    ``strerror`` says which."""


def open_plain(path: str | os.PathLike, flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags, mode)`` of a name the package keeps its own files under: a
    symbolic link there is not followed (O_NOFOLLOW) and a FIFO does not hang the open
    (O_NONBLOCK); a descriptor of anything but a regular file of one name is closed.

    In a folder others write in (a shared output folder), a neighbour can plant a link at a
    predictable name (``.o.nc.lock``): following it, a writer truncated and wrote over the
    link's target, a file of the writer's (a hard link to it does the same).

    Raises
    ------
    NotOurs
        A symbolic link, not a regular file, or a file with other names.
    OSError
        As os.open.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise NotOurs(errno.ELOOP, "is a symbolic link") from None
        raise
    info = os.fstat(fd)
    problem = ("is not a regular file" if not stat.S_ISREG(info.st_mode) else
               f"has {info.st_nlink} names (hard links)" if info.st_nlink > 1 else None)
    if problem:
        os.close(fd)
        raise NotOurs(errno.EEXIST, problem)
    return fd


def not_ours(output: str | os.PathLike, role: str, name: str | os.PathLike, problem: str) -> ConfigError:
    """The refusal of ``output`` whose ``role`` file (e.g. "lock file") ``name`` holds something
    the package never makes there (``problem``, e.g. "is a symbolic link"; :class:`NotOurs`)."""
    return ConfigError(f"output {str(output)!r}: its {role} {str(name)!r} {problem}, which "
                       "meanfield-pde never makes; delete it if you made it, or choose another name")


def _read_plain(path: str | os.PathLike, limit: int = 4096) -> bytes:
    """The first ``limit`` bytes of the regular file ``path`` (:func:`open_plain`: no link followed)."""
    fd = open_plain(path, os.O_RDONLY)
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def _try_lock(lock: Path) -> int | None:
    """A descriptor holding the flock of ``lock`` (created if needed), or None if another process
    holds it; :class:`NotOurs` if something else has the lock file's name (:func:`open_plain`)."""
    while True:
        fd = open_plain(lock, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:  # the holder may have unlinked the file between our open and our flock: retry
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def _release(lock: Path, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(lock)  # while still locked: a waiting opener sees the inode change and retries
    os.close(fd)


def acquire(path: str | os.PathLike) -> Path:
    """Claim the output ``path`` for this process (re-entrant); pair with :func:`release`.

    Raises
    ------
    ConfigError
        If another process holds it (the message names that process), the
        folder cannot take the lock file, or something else has its name (a
        symbolic link, a hard link, a special file: :func:`open_plain`).
    """
    lock = lock_path(path)
    key = str(lock)
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return lock
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = _try_lock(lock)
            for _ in range(RETRIES):  # a cleaner (clean_stale_temporaries) holds a lock for microseconds
                if fd is not None:
                    break
                time.sleep(0.05)
                fd = _try_lock(lock)
        except NotOurs as exc:
            raise not_ours(final_name(path), "lock file", lock, exc.strerror) from None
        except OSError as exc:
            raise ConfigError(f"output {str(path)!r}: cannot create its lock file in "
                              f"{str(lock.parent)!r} ({exc.strerror})") from None
        if fd is None:
            try:
                holder = (_read_plain(lock).decode(errors="replace").strip()
                          or "details not yet written")
            except OSError:
                holder = "details unreadable"
            raise ConfigError(f"output {str(final_name(path))!r} is being written by a running "
                              f"meanfield-pde process ({holder}); wait for it to end (or stop it) "
                              "before writing or resuming it, or choose another name")
        try:  # who holds it, for a refused writer's message; the claim is the flock
            os.ftruncate(fd, 0)
            os.write(fd, (_holder_text() + "\n").encode())
        except OSError:  # a full disk: the claim holds without it (read as "details not yet written")
            pass
        _held[key] = [fd, 1]
    clean_stale_temporaries(lock.parent)
    return lock


def release(path: str | os.PathLike) -> None:
    """Undo one :func:`acquire` of ``path``; the last one unlocks."""
    key = str(lock_path(path))
    _release_counted(_held, key, lambda fd: _release(Path(key), fd))


def _release_counted(table: dict, key, unlock: Callable[[int], None]) -> None:
    """One release of the counted claim ``table[key]`` = [descriptor, count] (absent: nothing);
    the last one removes it and calls ``unlock`` with its descriptor."""
    with _guard:
        entry = table.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del table[key]
            unlock(entry[0])


@contextlib.contextmanager
def hold(*paths: str | os.PathLike):
    """Claim every path for the duration (see :func:`acquire`); all or none."""
    done: list = []
    try:
        for p in paths:
            acquire(p)
            done.append(p)
        yield
    finally:
        for p in reversed(done):
            release(p)


def clean_stale_temporaries(folder: Path) -> list[Path]:
    """Delete the files in ``folder`` that killed writers left: their temporary files and lock files.

    A temporary file is only ever written by the holder of its output's
    claim, so a free claim means a killed writer; claims of this process are
    skipped (it may be writing them). Lock files are deleted only if free and
    written by this package (their text starts with "pid "). Temporary files
    of versions before the claims (``.meanfield-pde.XXXXXXXX.nc``, written
    unlocked) are deleted once unlocked and an hour old: such a writer renames
    its file within seconds. Returns the files deleted.
    """
    removed = []
    pattern = os.path.join(glob.escape(str(folder)), ".*{}")
    for tmp in glob.glob(pattern.format(f"{TMP_MARK}*.tmp")):
        name = os.path.basename(tmp)[1:].split(TMP_MARK)[0]
        if _with_free_claim(folder / f".{name}.lock", lambda: os.remove(tmp)):
            removed.append(Path(tmp))
    for lock in glob.glob(pattern.format(".lock")):
        try:  # not through a link, nor from a FIFO (it would hang)
            ours = _read_plain(lock).startswith(b"pid ")
        except OSError:
            continue
        if ours and _with_free_claim(Path(lock), lambda: None):  # _release unlinks it
            removed.append(Path(lock))
    for old in glob.glob(pattern.format("meanfield-pde.*.nc")):
        try:
            fd = open_plain(old, os.O_RDONLY)
        except OSError:
            continue
        try:
            if time.time() - os.fstat(fd).st_mtime <= LEGACY_AGE:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.remove(old)
            removed.append(Path(old))
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _with_free_claim(lock: Path, action: Callable[[], object]) -> bool:
    """Run ``action`` while holding the free, not-ours lock ``lock``; False if it is held."""
    with _guard:
        if str(lock) in _held:
            return False
        try:
            fd = _try_lock(lock)
        except OSError:
            return False
        if fd is None:
            return False
        try:
            action()
        except FileNotFoundError:
            return False
        finally:
            _release(lock, fd)
    return True


# -- claims of a file itself (writers in place) ---------------------------------------------------

_files: dict[tuple[int, int], list] = {}  # (st_dev, st_ino) -> [descriptor, count]


def acquire_file(path: str | os.PathLike, what: str | None = None) -> tuple[int, int]:
    """Claim the existing file ``path`` itself (its inode, whatever name reaches it) for writing
    it in place; re-entrant within a process; pair with :func:`release_file`.

    An exclusive ``fcntl.flock`` on a descriptor of the file, held until the last release
    (module docstring): a claim by name (:func:`acquire`) does not see the other names of a
    file, and two processes appending to one file through two names ruin it. A netCDF-4
    (HDF5) file is counted but not locked: HDF5 locks the files it opens itself (the package
    never writes one in place; a resume refuses it).

    Parameters
    ----------
    path : an existing regular file
    what : how messages name it (default "output 'PATH'")

    Returns
    -------
    (st_dev, st_ino)
        The file's key, for :func:`release_file` (valid after a rename of the file).

    Raises
    ------
    ConfigError
        Another process holds the claim (the message names it, pid and command, where the
        system lists flock holders in /proc/locks), or the file cannot be opened or locked.
    """
    what = what or f"output {str(path)!r}"
    flags = os.O_NONBLOCK | os.O_NOCTTY  # O_NONBLOCK: a FIFO put in its place does not hang the open
    try:  # for writing: an NFS client emulates flock by a POSIX lock, which needs it (flock(2))
        fd, writable = os.open(path, os.O_RDWR | flags), True
    except OSError:
        try:
            fd, writable = os.open(path, os.O_RDONLY | flags), False
        except OSError as exc:
            raise ConfigError(f"{what}: cannot read the file ({exc.strerror})") from None
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino)
    with _guard:
        if key in _files:
            os.close(fd)
            _files[key][1] += 1
            return key
        try:
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError(f"{what}: not a regular file")
            # not a netCDF-4 (HDF5) file: HDF5 flocks the files it opens, so a claim would make
            # every HDF5 open of it fail, this process's own ones too (a resume's refusal of a
            # netCDF-4 copy read "not a readable netCDF file"); the package writes only
            # netCDF-3 files in place, and HDF5's lock keeps HDF5 writers apart
            if os.pread(fd, len(HDF5_MAGIC), 0) != HDF5_MAGIC:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(f"{what}: the file is being written by a running meanfield-pde "
                              f"process ({_file_holder(info)}) under another of its names (a hard "
                              "link or a bind-mounted path) or this one; wait for it to end (or "
                              "stop it) before writing or resuming it") from None
        except OSError as exc:
            if not writable:  # read-only to this process: it writes nothing there, and the
                _files[key] = [fd, 1]  # writers' own checks say so (resume.require_writable)
                return key
            os.close(fd)
            raise ConfigError(f"{what}: cannot lock the file ({exc.strerror})") from None
        except BaseException:
            os.close(fd)
            raise
        _files[key] = [fd, 1]
    return key


def release_file(key: tuple[int, int] | None) -> None:
    """Undo one :func:`acquire_file` (``key`` as it returned; None: nothing); the last one unlocks."""
    _release_counted(_files, key, os.close)  # the flock ends with the last descriptor of its open file


@contextlib.contextmanager
def hold_file(path: str | os.PathLike, what: str | None = None):
    """Claim the file ``path`` itself for the duration (:func:`acquire_file`)."""
    key = acquire_file(path, what)
    try:
        yield key
    finally:
        release_file(key)


def _file_holder(info: os.stat_result) -> str:
    """The pid and command ("pid N, command: ...") of the process holding the flock of the file
    ``info`` describes, from the kernel's table of locks (Linux /proc/locks: "1: FLOCK
    ADVISORY WRITE pid MAJ:MIN:INODE 0 EOF"), else why it is not known."""
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return "its pid is not known on this system"
    device = (os.major(info.st_dev), os.minor(info.st_dev))
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or fields[3] != "WRITE":
            continue  # a waiter ("->"), a POSIX or read lock
        try:
            major, minor, inode = fields[5].split(":")
            if int(inode) == info.st_ino:  # overlay file systems list the lower device
                found.append(((int(major, 16), int(minor, 16)) != device, int(fields[4])))
        except ValueError:
            continue
    if not found:
        return "its pid is not known"
    pid = min(found)[1]
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        command = " ".join(a.decode(errors="replace") for a in argv if a)
    except OSError:
        return f"pid {pid}"
    command = "".join(c if c.isprintable() else repr(c)[1:-1] for c in command)[:300]
    return f"pid {pid}, command: {command}"


def _forget_files_in_child() -> None:
    """After a fork, the child closes its copies of the claimed files' descriptors: the
    parent's claims go on (the lock is the open file's, which the parent keeps open), but a
    child living on after its parent would otherwise keep the file claimed."""
    for fd, _ in _files.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _files.clear()


os.register_at_fork(after_in_child=_forget_files_in_child)


# -- checks ---------------------------------------------------------------------------------------

def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_output(path: str | os.PathLike, *, overwrite: bool, inputs: Iterable = (),
                 suffix: str | None = None) -> Path:
    """Refuse an output path before any work.

    Raises
    ------
    ConfigError
        Wrong suffix (when ``suffix`` is given); the path is one of the
        command's ``inputs`` (even with ``overwrite``); it exists (a file or
        a symbolic link, even a dangling one) and ``overwrite`` is false; it
        is a folder or a special file; its folder lies below a file or is
        not writable.
    """
    path = Path(path)
    if suffix is not None and path.suffix.lower() != suffix:
        raise ConfigError(f"output {str(path)!r}: the file name must end in {suffix}")
    for source in inputs:
        if _same_file(path, Path(source)):
            raise ConfigError(f"output {str(path)!r} is also an input of the command; "
                              "choose another output name")
    link = path.is_symlink()
    if path.exists() and not link and not path.is_file():
        raise ConfigError(f"output {str(path)!r}: exists and is not a regular file")
    if (link or path.exists()) and not overwrite:
        what = "exists (a symbolic link)" if link else "exists"
        raise ConfigError(f"output {str(path)!r} {what}: pass --overwrite (Python: overwrite=True) "
                          "to replace it, or choose another name")
    check_writable_folder(path.parent, f"output {str(path)!r}")
    return path


def check_writable_folder(folder: str | os.PathLike, what: str) -> Path:
    """Refuse, before any work, a folder (or the nearest existing folder above it) that cannot be
    written; ``what`` names the argument in the message (e.g. "plot --output 'x.png'").

    A file is made and removed there: ``os.access`` says yes to root even where writing fails
    (a read-only file system, /proc).

    Raises
    ------
    ConfigError
        If the nearest existing path is a file, or writing there fails (with the reason).
    """
    ancestor = Path(folder).absolute()
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"{what}: {str(ancestor)!r} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as exc:
        raise ConfigError(f"{what}: cannot write in {str(ancestor)!r} ({exc.strerror})") from None
    return ancestor


@contextlib.contextmanager
def claim(paths: Iterable, *, overwrite: bool, inputs: Iterable = ()):
    """Claim every output of a command for its whole run, then check each (:func:`check_output`).

    Claiming first makes the existence check race-free against other writers.
    """
    paths = [Path(p) for p in paths if p is not None]
    inputs = list(inputs)
    for p in paths:  # usable names before anything (the lock files) is created
        check_output(p, overwrite=True, inputs=inputs)
    with hold(*paths):
        for p in paths:
            check_output(p, overwrite=overwrite, inputs=inputs)
        yield paths


# -- room -----------------------------------------------------------------------------------------

def file_size_limit() -> int | None:
    """The process's file-size limit in bytes (``ulimit -f``), None if unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def check_room(path: Path, nbytes: int, size_after: int | None = None) -> None:
    """Raise :class:`OutputFull` unless ``nbytes`` more fit on ``path``'s disk and the file,
    ``size_after`` bytes long after the write (default ``nbytes``), fits the file-size limit."""
    limit = file_size_limit()
    size_after = nbytes if size_after is None else size_after
    if limit is not None and size_after > limit:
        raise OutputFull(errno.EFBIG, f"file-size limit (ulimit -f) of {limit} bytes reached: the "
                         f"file would grow to {size_after} bytes")
    folder = path.parent if path.parent.exists() else Path(".")
    free = shutil.disk_usage(folder).free
    if nbytes > free:
        raise OutputFull(errno.ENOSPC, f"no space left on the disk of {str(folder)!r}: {nbytes} bytes "
                         f"needed, {free} free")


def disk_estimate(path: Path, nbytes: int, what: str) -> str | None:
    """Refuse (ConfigError) a planned file of ``nbytes`` that the free disk space or the file-size
    limit cannot hold; return a warning text when it would take more than half the free space."""
    folder = path.absolute().parent
    while not folder.exists():
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    limit = file_size_limit()
    if limit is not None and nbytes > limit:
        raise ConfigError(f"{what}: about {nbytes / 1e6:.3g} MB, over the file-size limit "
                          f"(ulimit -f) of {limit / 1e6:.3g} MB; raise the limit or store fewer "
                          "snapshots (output.every)")
    if nbytes > free:
        raise ConfigError(f"{what}: about {nbytes / 1e6:.3g} MB, but {str(folder)!r} has "
                          f"{free / 1e6:.3g} MB free; free space or store fewer snapshots (output.every)")
    if nbytes > free / 2:
        return (f"{what}: about {nbytes / 1e6:.3g} MB, more than half of the {free / 1e6:.3g} MB "
                f"free in {str(folder)!r}")
    return None


def full_error(exc: BaseException) -> OutputFull | None:
    """The :class:`OutputFull` that an OSError of a full disk/quota/size limit means, else None."""
    if isinstance(exc, OutputFull):
        return exc
    if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
        return OutputFull(exc.errno, os.strerror(exc.errno))
    return None


# -- writing --------------------------------------------------------------------------------------

def temporary(path: Path) -> Path:
    """A new empty temporary file for ``path`` in its folder (0600, see :func:`publish`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TMP_MARK}", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def publish(tmp: Path, path: Path) -> None:
    """Give ``tmp`` the usual permissions (0666 less the umask) and rename it to ``path``
    (replacing a symbolic link itself, never its target)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files
    os.replace(tmp, path)


def write_file(path: str | os.PathLike, write: Callable[[Path], object], *, overwrite: bool,
               inputs: Iterable = (), suffix: str | None = None) -> Path:
    """Write an output file the one safe way: claim, check, write aside, rename.

    Parameters
    ----------
    path : the output
    write : callable(temporary_path)
        Writes the whole content into the temporary file given.
    overwrite, inputs, suffix :
        As :func:`check_output`.

    Raises
    ------
    ConfigError
        From :func:`acquire` / :func:`check_output`, before anything is written.
    OutputFull
        The disk, quota or file-size limit could not take the file (nothing
        is left behind, an existing file is kept).
    """
    path = Path(path)
    with hold(path):
        check_output(path, overwrite=overwrite, inputs=inputs, suffix=suffix)
        tmp = temporary(path)
        try:
            write(tmp)
            publish(tmp, path)
        except OSError as exc:
            full = full_error(exc)
            if full is None:
                raise
            raise OutputFull(full.errno, f"cannot write {str(path)!r}: {full.strerror}") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
    return path


FIGURE_SUFFIXES = (".png", ".pdf", ".svg")  # figure formats chosen by the output's suffix


def check_figure_suffix(path: str | os.PathLike, what: str = "figure") -> str:
    """The format ('png', 'pdf' or 'svg') of a figure path; ConfigError naming the allowed suffixes."""
    suffix = Path(path).suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        raise ConfigError(f"{what} {str(path)!r}: the file name must end in "
                          f"{', '.join(FIGURE_SUFFIXES[:-1])} or {FIGURE_SUFFIXES[-1]}")
    return suffix[1:]


def save_png(fig, path: str | os.PathLike, *, overwrite: bool, dpi: int = 110, inputs: Iterable = ()) -> Path:
    """Write a matplotlib figure through :func:`write_file` (and close it): PNG, or PDF / SVG
    (vector) when the path ends in .pdf / .svg (:func:`check_figure_suffix`)."""
    import matplotlib.pyplot as plt
    try:
        fmt = check_figure_suffix(path)
        return write_file(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt),
                          overwrite=overwrite, inputs=inputs, suffix=f".{fmt}")
    finally:
        plt.close(fig)

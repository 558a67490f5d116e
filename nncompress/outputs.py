"""Where output goes: writes that insist on every byte, outputs that are devices or descriptors
(written through, never replaced), finished files placed under their name without clobbering
(also on filesystems without hard links), and the input's metadata carried over."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys


def write_all(sink, data) -> None:
    """sink.write(data), insisting on every byte.

    A buffered writer may accept part of a large write and report the short count instead of the
    error (a pipe whose reader went away does this); writing the rest surfaces the error."""
    view = memoryview(data)
    while view:
        count = sink.write(view)
        if not count:
            raise OSError(errno.EIO, "write made no progress")
        view = view[count:]


def _is_special(path: str) -> bool:
    """An existing output that is (or links to) a device, pipe or socket: written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


_FD_PATH = re.compile(r"/proc/(self|\d+)/fd/(\d+)")


def descriptor_of(path: str) -> int | None:
    """The descriptor of this process that `path` names (/dev/stdout, /dev/fd/N,
    /proc/self/fd/N, or a symlink to one of them), else None.

    Those are magic links: following them reaches whatever the descriptor is (a file that
    standard output was redirected to looks like a regular file), so they must be written
    through, never replaced with a new file."""
    for _ in range(40):
        parent, base = os.path.split(os.path.abspath(path))
        full = os.path.join(os.path.realpath(parent), base)
        match = _FD_PATH.fullmatch(full)
        if match and match.group(1) in ("self", str(os.getpid())):
            return int(match.group(2))
        try:
            target = os.readlink(full)
        except OSError:  # not a link, or not ours to read
            return None
        path = os.path.join(parent, target)
    return None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# -- placing a finished output under its name without clobbering -----------------------------

_RENAME_NOREPLACE = 1


def _renameat2_noreplace(source: str, destination: str) -> bool:
    """Linux renameat2(RENAME_NOREPLACE): True if done, False if unavailable here; raises
    FileExistsError when the destination exists."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here, not at the top: --help and --version do not need it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(source), at_fdcwd, os.fsencode(destination),
                       _RENAME_NOREPLACE)
    if result == 0:
        return True
    error = ctypes.get_errno()
    if error == errno.EEXIST:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), destination)
    if error in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP):
        return False  # the filesystem (or the kernel) does not support the flag
    raise OSError(error, os.strerror(error), destination)


def place_no_clobber(temp: str, destination: str) -> None:
    """Give the finished file `temp` the name `destination`, failing if that exists.

    A hard link is atomic and portable; filesystems without hard links (vfat, exFAT, many
    SMB/FUSE mounts) refuse it, so fall back to renameat2(RENAME_NOREPLACE), and where that is
    missing too, claim the name with an exclusive create and rename over that placeholder
    (no other writer can take the name in between; a crash in that instant leaves an empty file)."""
    try:
        os.link(temp, destination)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK,
                             errno.ENOSYS, errno.EXDEV, errno.EACCES):
            raise
    else:
        os.unlink(temp)
        return
    if _renameat2_noreplace(temp, destination):
        return
    placeholder = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(placeholder)
    os.replace(temp, destination)


def copy_metadata(temp: str, info, keep_time_and_owner: bool = True) -> None:
    """Give the finished output `temp` the input's permission bits (never setuid, setgid or
    sticky), times and, as root, owner, in gzip's order: group, then mode, then user.  From
    standard input (info None): the mode the umask gives a new file, as a shell redirection."""
    # Each step may be refused (a filesystem without permissions or owners, a group the caller
    # is not in, a user who is not root): the output then keeps what mkstemp gave it (0600,
    # the caller's), the safe direction, as gzip does after its warning.
    try:
        if info is None:
            os.chmod(temp, 0o666 & ~_umask())
            return
        if keep_time_and_owner:
            _quietly(os.chown, temp, -1, info.st_gid)
        mode = stat.S_IMODE(info.st_mode) & 0o777
        if os.stat(temp).st_gid != info.st_gid:
            # the output's group is not the input's: give group and others only what the
            # input gave both (xz's rule), so no other group gains access
            shared = (mode >> 3) & mode & 0o7
            mode = (mode & 0o700) | (shared << 3) | shared
        os.chmod(temp, mode)
        if keep_time_and_owner:
            _quietly(os.chown, temp, info.st_uid, -1)
            os.utime(temp, ns=(info.st_atime_ns, info.st_mtime_ns))
    except OSError:
        pass


def _quietly(function, *args) -> None:
    try:
        function(*args)
    except OSError:
        pass

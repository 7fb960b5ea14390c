"""Writing the append-only logs: tail recovery, cuts, and appends under a lock.

Writing is one ``write(2)`` per record or batch on an ``O_APPEND`` descriptor, under a
cheap ``flock`` on that descriptor. Before its first append a writer finds where the
good part of the file ends (`_log.scan.last_good`) and cuts a damaged tail into a
sidecar file; later appends learn what other processes wrote from one ``fstat`` under
the lock (spec §9, rules 1 to 3).
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable

from .._errors import (
    DurabilityError,
    LockTimeout,
    StorageError,
    UnrecognizedRecords,
    name_file,
    storage_error,
)
from .._format import lines as _lines
from .._format.ids import new_uuid7
from .._format.names import cut_name, is_tmp_name_of, numbered_name, tmp_name
from .._io import atomic as _atomic
from .._io.fs import FILE_MODE, SAFE_FLAGS, StatResult, check_directory, open_regular
from .._io.session_dir import SessionDir
from .._process import LOG_WRITERS, Current
from .problems import DISCARD, RESTORE, Problem, Reporter, cut_into
from .scan import (
    CHUNK,
    RECORD_LIKE_LIMIT,
    Line,
    RecordLike,
    conversion_problem,
    first_line_converted,
    last_good,
    scan,
    sealed_before,
)

#: Spec §9.2: the next sequence follows the highest one among the lines that start in this
#: many bytes before the last good line. A rule of the format, not a tuning knob.
SEQUENCE_WINDOW = 4096
# Opened through `open_regular`, which adds O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC and checks
# the descriptor is a regular file: one fstat per open, nothing per append.
FLAGS_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT


def free_sidecar(where: SessionDir, name: str) -> str:
    """The path of the first of ``name``, ``name.2``, ``name.3`` ... in the session directory that does not exist.

    ``lstat``: a dangling symlink is a name that exists (an ``O_EXCL`` create fails on it).
    """
    candidate, attempt = name, 1
    while True:
        path = where.file(candidate)
        try:
            where.fs.lstat(path)
        except FileNotFoundError:
            return path
        attempt += 1
        candidate = numbered_name(name, attempt)


class LogWriter:
    """Appends checksummed lines to one log file; one instance per store and file.

    State known from the last append (file size, last line) lets the next append skip
    re-reading: under the lock an ``fstat`` tells whether another process wrote since,
    and only then is the new region read. A damaged tail is cut into a sidecar first.
    """

    def __init__(
        self,
        where: SessionDir,
        name: str,
        *,
        durable: bool,
        lock_timeout: float,
        label: str,
        on_new_file: Callable[[], None] | None = None,
        accept: Callable[[Line], bool] | None = None,
        sequence_of: Callable[[bytes], int] | None = None,
        reporter: Reporter = DISCARD,
    ) -> None:
        #: The log is ``name`` (one of `_format.names`'s log names) in the session directory.
        self.where = where
        # Its parts as attributes of their own too: every append reads them, and an
        # attribute is one lookup where ``self.where.fs`` is two.
        self.fs = where.fs
        self.path = where.file(name)
        self.directory = where.path
        self.durable = durable
        self.lock_timeout = lock_timeout
        self.label = label
        self.session_id = where.session_id or None
        self.on_new_file = on_new_file
        self.accept = accept
        self.sequence_of = sequence_of
        self.mutex = threading.Lock()
        self.fd = -1
        self.pid = 0
        self.size = 0
        self.last: Line | None = None
        self.failed: BaseException | None = None
        #: Where the writer says what it restored or cut (spec §12: a writer reports its cuts).
        self.reporter = reporter
        LOG_WRITERS.add(self)

    def _after_fork_in_child(self) -> None:
        # Only the forking thread lives on in the child: a mutex another thread held at the
        # fork would never be released there. The child reopens the file anyway (its
        # `Current.pid` differs from ``self.pid``), so a fresh mutex guards nothing stale.
        self.mutex = threading.Lock()

    # -- descriptor and lock ------------------------------------------------------------

    def _open(self, replaced: bool = False) -> None:
        """Open the file (creating it); ``replaced``: it was deleted under an open descriptor."""
        if self.fd >= 0 and self.pid == Current.pid:
            return
        # After fork the inherited descriptor shares its flock with the parent, which
        # would let both processes in at once: a child always opens its own.
        self.fd = -1
        # Checked at every open, not once: the directory may have been replaced since.
        check_directory(self.fs, self.directory, session_id=self.session_id)
        try:
            fd = open_regular(self.fs, self.path, FLAGS_APPEND | os.O_EXCL, session_id=self.session_id)
            created = True
        except FileExistsError:
            fd = open_regular(self.fs, self.path, FLAGS_APPEND, session_id=self.session_id)
            created = False
        try:
            if self.durable:
                # Every open, not only a create: a process that crashed (or whose fsync
                # failed) right after creating the file left its name volatile, and
                # records acknowledged later would vanish with it on a power loss.
                self.fs.fsync_dir(self.directory)
            if (created or replaced) and self.on_new_file is not None:
                # A file new to this writer (made now, or made by another process after the
                # one we had was deleted): what the owner cached about it must be read again.
                self.on_new_file()
        except BaseException:
            self.fs.close(fd)
            raise
        self.fd = fd
        self.pid = Current.pid
        self.size = -1  # unknown: the first locked sync reads the log's end
        self.last = None

    def close(self) -> None:
        with self.mutex:
            if self.fd >= 0 and self.pid == Current.pid:
                self.fs.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        # A store dropped without close() (an adapter's session object that went out of
        # scope) must not keep its descriptors for the rest of the process: with a low
        # RLIMIT_NOFILE they run out, and past 1024 select() refuses them. No lock here:
        # nothing else can reach an object being finalized.
        fd = self.fd
        if fd >= 0 and self.pid == Current.pid:
            self.fd = -1
            try:
                self.fs.close(fd)
            except OSError:
                pass

    def release(self) -> int:
        """Close the descriptor unless an append holds it right now; 1 if one was closed.

        Called when the process is out of descriptors, maybe from inside another append
        of this very writer: never waits (the next append reopens the file).
        """
        if not self.mutex.acquire(blocking=False):
            return 0
        try:
            if self.fd < 0 or self.pid != Current.pid:
                return 0
            self.fs.close(self.fd)
            self.fd = -1
            return 1
        finally:
            self.mutex.release()

    def known_last(self) -> tuple[Line | None] | None:
        """``(last,)``: the line this writer knows the log's good part to end with (batch
        ends only, spec §8.7), when the file at the log's path is still the one it wrote
        and has the size it left; None when that is not known.

        What reading the log's end would find, without reading it. The test is the one an
        append makes under its lock before it trusts ``last`` (spec §9.2's size, §9.3's
        link count), made without the lock, plus a ``lstat`` of the path: a log that is
        still linked is not necessarily still *here* (its directory moved aside, or a hard
        link kept, and the session made anew). A same-size rewrite of the file in place is
        outside the format (§9.5) and goes unseen, as it would by the next append. Never
        waits (an append in progress on this writer makes it None), and never raises: an
        error of either call makes it None, and the caller reads the file.
        """
        if not self.mutex.acquire(blocking=False):
            return None
        try:
            if self.fd < 0 or self.pid != Current.pid or self.failed is not None or self.size < 0:
                return None
            try:
                st = self.fs.fstat(self.fd)
                if st.st_nlink == 0 or st.st_size != self.size:
                    return None
                here = self.fs.lstat(self.path)
            except OSError:
                return None
            # A `FileSystem` of the caller's may give no inode numbers: then nothing is known.
            identity = (getattr(st, "st_dev", None), getattr(st, "st_ino", None))
            if identity[1] is None or identity != (
                getattr(here, "st_dev", None),
                getattr(here, "st_ino", None),
            ):
                return None
            return (self.last,)
        finally:
            self.mutex.release()

    def _lock(self) -> None:
        fs, fd = self.fs, self.fd
        try:
            fs.flock(fd, _LOCK_EX_NB)
            return
        except BlockingIOError:
            pass
        # Contended: poll with a growing pause. flock has no timeout of its own, and a
        # holder that dies releases its lock with its descriptor, so waiting is bounded
        # by live holders only.
        deadline = time.monotonic() + self.lock_timeout
        pause = 0.0001
        while True:
            time.sleep(pause)
            try:
                fs.flock(fd, _LOCK_EX_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeout(
                        f"could not lock {self.label} within {self.lock_timeout} s",
                        session_id=self.session_id,
                        path=self.path,
                    ) from None
                pause = min(pause * 2, 0.005)

    def _unlock(self) -> None:
        if self.fd >= 0:  # -1 when reopening after a delete failed half-way
            self.fs.flock(self.fd, _LOCK_UN)

    def _sync(self, st: StatResult | None = None) -> None:
        """Bring ``size``/``last`` up to date with the file; called with the lock held.

        ``st``: the descriptor's fstat, when the caller has just made it.
        """
        if st is None:
            st = self.fs.fstat(self.fd)
        if st.st_nlink == 0:
            # The file was deleted (delete_session) while we held it open: start anew.
            self.fs.flock(self.fd, _LOCK_UN)
            self.fs.close(self.fd)
            self.fd = -1
            self._open(replaced=True)
            self._lock()
            st = self.fs.fstat(self.fd)
        size = st.st_size
        if size == self.size:
            return
        floor = self.last.end if (self.last is not None and 0 <= self.size < size) else 0
        good_end, line = last_good(self.fs, self.fd, size, floor, self.accept)
        if line is None and floor > 0:
            good_end, line = floor, self.last
        elif (line is not None and line.converted) or (
            self.size == -1 and line is not None and first_line_converted(self.fs, self.fd, size)
        ):
            # A text tool (git with core.autocrlf, an editor) added bytes to the lines: give
            # the file back what its writers wrote before appending, so the log never mixes
            # line ends and no record is ever taken for a damaged tail (spec §9.3).
            self._restore(size)
            self._sync()
            return
        if line is not None and self.sequence_of is not None:
            line.sequence = self._highest_sequence(line)
        if good_end < size:
            self._cut(good_end, size)
        self.size = good_end
        self.last = line

    def _restore(self, size: int) -> None:
        """Replace the file by its bytes without what a text conversion added; lock held.

        Every valid line loses the ``\\r`` before its ``\\n`` (and the first one a BOM in
        front of it); every other byte, damage included, is copied as it is. The new file
        is complete and synced before it takes the name, whatever the durability mode:
        this rewrites a whole log. Writers of other processes blocked on the old file's
        lock find it unlinked (``st_nlink == 0``) and reopen the new one, as after a delete.
        """
        fs = self.fs
        name = os.path.basename(self.path)
        self._remove_stale_copies(name)
        temp = os.path.join(self.directory, tmp_name(name, new_uuid7()[-12:]))
        try:
            out = fs.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_FLAGS, FILE_MODE)
        except OSError as exc:
            raise self._restore_failed(exc, size) from exc
        try:
            count, first = self._write_restored(out, size)
            fs.fsync(out)
        except BaseException as exc:
            fs.close(out)
            try:
                fs.unlink(temp)
            except FileNotFoundError:
                pass
            if isinstance(exc, OSError):
                raise self._restore_failed(exc, size) from exc
            raise
        fs.close(out)
        fs.rename(temp, self.path)
        fs.fsync_dir(self.directory)
        # Our descriptor is on the old file: release it (and its lock) and take the new one.
        fs.close(self.fd)
        self.fd = -1
        self._open()
        self._lock()
        self.size = -1
        self.last = None
        self.reporter.report(conversion_problem(self.path, count, first, RESTORE))

    def _remove_stale_copies(self, name: str) -> None:
        # Only a restore makes ``<log>.<token>.tmp``, always under this lock: any such file
        # now is what a restore that crashed left, a copy of the log as big as the log.
        for stale in self.fs.listdir(self.directory):
            if is_tmp_name_of(stale, name):
                try:
                    self.fs.unlink(os.path.join(self.directory, stale))
                except FileNotFoundError:
                    pass

    def _write_restored(self, out: int, size: int) -> tuple[int, int]:
        """Write the log's first ``size`` bytes to ``out`` as written; (lines restored, first one's offset)."""
        fs, fd = self.fs, self.fd
        pending: list[bytes] = []
        held = 0

        def emit(data: bytes) -> None:
            nonlocal held
            pending.append(data)
            held += len(data)
            if held >= CHUNK:
                flush()

        def flush() -> None:
            nonlocal held
            _atomic.write_all(fs, out, b"".join(pending))
            pending.clear()
            held = 0

        def copy(start: int, stop: int) -> None:
            while start < stop:
                chunk = fs.pread(fd, min(CHUNK, stop - start), start)
                if not chunk:
                    return
                emit(chunk)
                start += len(chunk)

        count, first, position = 0, -1, 0
        for line in scan(fs, fd, self.path, 0, size, DISCARD):
            if not line.converted:
                continue  # copied with the bytes around it
            count += 1
            bom = line.offset == len(_lines.BOM) and fs.pread(fd, len(_lines.BOM), 0) == _lines.BOM
            if first < 0:
                first = 0 if bom else line.offset
            copy(position, 0 if bom else line.offset)
            emit(line.body)
            emit(b"\n")
            position = line.end
        copy(position, size)
        flush()
        return count, first

    def _restore_failed(self, exc: OSError, size: int) -> StorageError:
        """What a failed restore tells the caller: the log is intact, and what it needs."""
        name_file(exc, self.path)
        return storage_error(
            exc,
            f"{self.label}: its line ends were converted (\\r\\n); restoring the bytes as written "
            f"before appending needs about {size} bytes of free space beside the log, and the log "
            f"is unchanged; free some space and try again, or run repair",
            session_id=self.session_id,
            where=self.path,
        )

    def _highest_sequence(self, line: Line) -> int:
        """The highest sequence among the lines just before ``line`` (and ``line`` itself).

        Our writers only ever append increasing sequences; a log another program wrote out
        of order would make "last line + 1" a duplicate, so the next sequence continues
        after the highest one seen in the last few KiB (without reading the whole log).
        """
        sequence_of = self.sequence_of
        assert sequence_of is not None
        highest = sequence_of(line.body)
        for raw in sealed_before(self.fs, self.fd, line.offset, SEQUENCE_WINDOW):
            highest = max(highest, sequence_of(raw))
        return highest

    def _cut(self, good_end: int, size: int) -> None:
        """Move the damaged tail ``[good_end, size)`` into a sidecar, then truncate."""
        fs, directory = self.fs, self.directory
        # Never overwrite an earlier sidecar (two crashes can tear the log at one offset):
        # every cut keeps its bytes in a file of its own.
        while True:
            sidecar = free_sidecar(self.where, cut_name(os.path.basename(self.path), good_end))
            try:
                fd = fs.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_FLAGS, FILE_MODE)
                break
            except FileExistsError:  # taken between the look and the create: look again
                continue
        suspect = RecordLike()
        try:
            # Copied a chunk at a time: a damaged tail can be any length, memory stays flat.
            # The same pass looks for lines like records, so the damaged tail is read once.
            position = good_end
            while position < size:
                data = fs.pread(self.fd, min(CHUNK, size - position), position)
                if not data:
                    break
                _atomic.write_all(fs, fd, data)
                suspect.feed(data)
                position += len(data)
            if suspect.count < RECORD_LIKE_LIMIT:
                fs.fsync(fd)
        finally:
            fs.close(fd)
        if suspect.count >= RECORD_LIKE_LIMIT:
            # The cut rule (spec §9.3) with a margin: what a crash leaves is never several
            # whole lines that carry a checksum key and fail it. Nothing is cut.
            fs.unlink(sidecar)
            raise UnrecognizedRecords(
                f"{self.label}: the last {suspect.count} lines look like records but fail their checksums "
                f"(changed by a text tool this version cannot undo?); they are not cut: restore the "
                f"file's bytes as written, or move it aside",
                session_id=self.session_id,
                path=self.path,
                offset=good_end,
            )
        fs.fsync_dir(directory)
        fs.ftruncate(self.fd, good_end)
        fs.fsync(self.fd)
        self.reporter.report(
            Problem(
                path=self.path,
                kind="torn-tail",
                reason=f"{size - good_end} bytes after the last good record",
                action=cut_into(os.path.basename(sidecar)),
                offset=good_end,
            )
        )

    # -- appending ----------------------------------------------------------------------

    def append(self, build: Callable[[Line | None], tuple[bytes, Line]]) -> Line:
        """Append what ``build(last_line)`` returns; give back the line it describes.

        ``build`` runs under the lock, so what it derives from the last line (the next
        sequence) cannot be taken by another writer. It returns the bytes to write and
        the `Line` that will be last afterwards (its offsets relative to the write).
        """
        mutex = self.mutex  # not `with`: about 1,300 instructions fewer per append
        mutex.acquire()
        try:
            if self.failed is not None:
                failed = self.failed
                raise DurabilityError(
                    f"{self.label}: an earlier write or fsync failed; reopen the store to recover",
                    # The first failure's errno: the caller can still tell ENOSPC from EIO.
                    errno=getattr(failed, "errno", None),
                    strerror=getattr(failed, "strerror", None),
                    filename=self.path,
                    session_id=self.session_id,
                    path=self.path,
                ) from failed
            # `_open`, `_io.lock`, `_sync` and `_unlock` with their common case inline: four
            # system calls (flock, fstat, write, flock) and no other call per append.
            fs = self.fs
            if self.fd < 0 or self.pid != Current.pid:
                self._open()
            try:
                fs.flock(self.fd, _LOCK_EX_NB)
            except BlockingIOError:
                self._lock()  # another writer holds it: wait
            try:
                # fstat, not an lseek for the size: only the link count tells a log that
                # was deleted or replaced under our descriptor (delete_session, `rm -r`, a
                # restore, a git checkout) from one nobody touched.
                st = fs.fstat(self.fd)
                if st.st_nlink == 0 or st.st_size != self.size:
                    self._sync(st)
                data, line = build(self.last)
                start = self.size
                try:
                    written = fs.write(self.fd, data)
                    if written != len(data):
                        raise _short_write(written, len(data))
                except OSError as exc:
                    raise self._write_failed(start, exc) from exc
                line.offset += start
                line.end += start
                self.size = start + len(data)
                self.last = line
            except OSError as exc:
                name_file(exc, self.path)  # reading the log's end, cutting it: calls on descriptors
                raise
            finally:
                if self.fd >= 0:  # as in `_unlock`
                    fs.flock(self.fd, _LOCK_UN)
            if self.durable:
                try:
                    fs.fdatasync(self.fd)
                except OSError as exc:
                    # Never retry: after a failed fsync the kernel may have dropped the
                    # dirty pages and a second fsync would falsely succeed (PostgreSQL's
                    # "fsyncgate"). Refuse further appends until the store is reopened.
                    self.failed = exc
                    raise self._failure("fsync", exc) from exc
            return line
        finally:
            mutex.release()

    def restore(self) -> None:
        """Open, lock, give back the written bytes of every converted line, cut a damaged tail."""
        with self.mutex:
            self._open()
            self._lock()
            try:
                self._restore(self.fs.fstat(self.fd).st_size)
                self._sync()
            finally:
                self._unlock()

    def append_nothing(self) -> None:
        """Open, lock and bring the file up to date (cutting a damaged tail); write nothing."""
        with self.mutex:
            self._open()
            self._lock()
            try:
                self._sync()
            finally:
                self._unlock()

    def _write_failed(self, start: int, exc: OSError) -> DurabilityError:
        """Take back what a failed write left after ``start``; the error to raise."""
        self._undo(start, exc)  # the record must not stay half-written
        return self._failure("write", exc)

    def _failure(self, operation: str, exc: OSError) -> DurabilityError:
        return DurabilityError(
            f"{self.label}: {operation} failed: {exc.strerror or exc}",
            errno=exc.errno,
            strerror=exc.strerror,
            filename=self.path,
            session_id=self.session_id,
            path=self.path,
        )

    def _undo(self, start: int, cause: BaseException) -> None:
        try:
            if self.fs.fstat(self.fd).st_size != start:
                self.fs.ftruncate(self.fd, start)
        except OSError:
            # Could not take the partial bytes back: the log's end stays damaged until the
            # next open cuts it, so this writer must not append after it.
            self.failed = cause


def _short_write(written: int, wanted: int) -> OSError:
    # On a local file system only a full disk (or quota, or size limit) stops write(2)
    # part-way, and it reports no errno for the part it did write; ENOSPC is what the
    # next write would fail with.
    short = f"short write: {written} of {wanted} bytes"
    return OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} ({short})")


_LOCK_EX_NB = fcntl.LOCK_EX | fcntl.LOCK_NB
_LOCK_UN = fcntl.LOCK_UN

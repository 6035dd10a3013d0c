# SPDX-License-Identifier: Apache-2.0
"""I/O statistics: a :class:`SummaryMonitor` counts what KvikIO does while it exists, and each
reading of it is a :class:`Summary`.

The counting is done in C++ (``kvikio::statistics``), told of every operation as it starts and
ends; Python pays only for taking a reading. With no monitor alive, nothing is counted.
"""

from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict

from kvikio._lib import statistics as _statistics


@dataclass(frozen=True)
class Summary:
    """One reading of a :class:`SummaryMonitor`: what KvikIO's I/O came to over a span.

    Obtain one from :meth:`SummaryMonitor.get` or :meth:`SummaryMonitor.since` (or
    :meth:`Summary.since`, :meth:`Summary.deserialize`); it is not meant to be constructed
    directly. A reading never changes once taken.

    An operation is one call (a ``pread``, a ``read``, one request of a batch), however many
    system calls or requests it took. Fields ending in ``_ns`` are nanoseconds; the two
    ``*_unix_ns`` timestamps are nanoseconds since the Unix epoch, comparable with
    ``time.time_ns()``. Spans are measured on a monotonic clock and placed on the wall clock
    through the anchor the monitor took when it was created, so a step of the system clock
    changes no duration.
    """

    class BackendTotals(TypedDict):
        """The part of the totals one backend carried (a value of :attr:`Summary.by_backend`)."""

        num_ops: int
        bytes_transferred: int
        total_duration_ns: int
        num_errors: int

    start_unix_ns: int
    """Start of the span: the monitor's creation or last reset, or the earlier reading."""
    end_unix_ns: int
    """End of the span: when this reading was taken (or when the monitor stopped)."""
    num_ops: int
    """Operations that completed in the span, failed ones included."""
    num_reads: int
    """Of those, reads."""
    num_writes: int
    """Of those, writes."""
    bytes_requested: int
    """Bytes the operations asked to move."""
    bytes_transferred: int
    """Bytes moved; less than requested after a short or failed operation."""
    bytes_read: int
    """Bytes moved by reads."""
    bytes_written: int
    """Bytes moved by writes."""
    num_errors: int
    """Operations that failed (each counts as an operation, with 0 bytes moved)."""
    busy_ns: int
    """Time during which at least one operation was in flight: overlapping operations count
    once and idle gaps not at all, so it never exceeds :attr:`wall_ns`."""
    total_duration_ns: int
    """The durations of the operations added up: every operation counts, overlapping or not."""
    by_backend: dict[str, BackendTotals] = field(hash=False)
    """Totals per backend ("POSIX", "GDS", "MMAP", "REMOTE_HTTP", "REMOTE_HDFS", always all
    five), which add up to the summary's own. A dict: left out of :func:`hash`, though it takes
    part in ``==``."""
    counters: dict[str, int] = field(hash=False)
    """Work of the span that belongs to no one operation: remote size probes, HTTP connections
    (DNS, TCP and TLS time), HTTP retries and their backoff. The keys are those of
    :meth:`to_json`. Left out of :func:`hash`, as :attr:`by_backend` is."""
    wall_ns: int
    """Length of the span, ``end_unix_ns - start_unix_ns`` (0 for an empty span)."""
    busy_bytes_per_sec: float
    """Bytes moved per second of :attr:`busy_ns` (0 if never busy): the rate of the storage while
    in use, not diluted by the time the program spent elsewhere. Times :attr:`busy_fraction`, it
    is the rate over the whole span."""
    busy_fraction: float
    """:attr:`busy_ns` over :attr:`wall_ns`, from 0 to 1 (0 for an empty span)."""
    mean_duration_ns: int
    """``total_duration_ns // num_ops`` (0 with no operations)."""

    # The C++ reading behind the fields; the report, the JSON, since() and the bytes come from
    # it. A ClassVar, so that it is no dataclass field (no __init__ argument, not in ==).
    _handle: ClassVar[Any] = None

    @classmethod
    def _from_handle(cls, handle: Any) -> "Summary":
        summary = cls(**handle.as_dict())
        object.__setattr__(summary, "_handle", handle)  # frozen: bypass the generated __setattr__
        return summary

    def since(self, previous: "Summary") -> "Summary":
        """The interval from an earlier reading of the same span to this one.

        Taking one reading per tick and differencing it against the last gives intervals that
        abut exactly and add up to the whole run; two calls of :meth:`SummaryMonitor.since`
        would leave a gap between them.

        Parameters
        ----------
        previous
            A reading taken earlier by ``get()`` of the same monitor, since its last reset.

        Returns
        -------
        Summary
            Totals of ``[previous.end_unix_ns, self.end_unix_ns)``.

        Raises
        ------
        ValueError
            If ``previous`` is not such a reading: an interval (a result of ``since()``), a
            reading of another monitor or from before a reset, or a later reading.
        """
        return Summary._from_handle(self._handle.since(previous._handle))

    def to_json(self) -> str:
        """The reading as one line of JSON, for other programs.

        The keys are the fields' names (``by_backend`` has all five backends, ``counters`` all
        eight counters), with the timestamps on the wall clock in ns since the Unix epoch.

        Returns
        -------
        str
            A JSON object, without a trailing newline.
        """
        return self._handle.to_json()

    def serialize(self) -> bytes:
        """The reading, exactly, as bytes that :meth:`deserialize` reads back.

        All of it survives, the monotonic-clock span included, so a reading that went through
        a pipe or a pickle is still a valid ``previous`` for :meth:`since`. For other programs,
        use :meth:`to_json`: these bytes are only read by the same build of KvikIO.

        Returns
        -------
        bytes
            A fixed-size buffer.
        """
        return self._handle.serialize()

    @staticmethod
    def deserialize(data: bytes) -> "Summary":
        """The reading that :meth:`serialize` wrote.

        Parameters
        ----------
        data
            The bytes :meth:`serialize` returned.

        Returns
        -------
        Summary
            The reading, equal to the one serialized.

        Raises
        ------
        TypeError
            If ``data`` is not ``bytes``.
        ValueError
            If ``data`` is not a serialized summary (a wrong length or magic, truncated), or
            comes from another build of KvikIO or a machine of another byte order.
        """
        if not isinstance(data, bytes):
            raise TypeError(
                f"Summary.deserialize: data must be bytes, not {type(data).__name__}"
            )
        return Summary._from_handle(_statistics.Summary.deserialize(data))

    def __reduce__(self):
        # The C++ reading has no pickling of its own: pickle, copy and deepcopy go by its bytes.
        return (Summary.deserialize, (self.serialize(),))

    def report(self, all_rows: bool = False) -> str:
        """The reading for a person: one labelled row per quantity, in readable units.

        Parameters
        ----------
        all_rows
            Also print the rows of backends the span never used and of subsystems it never
            touched (``unused``, zeros); by default they are left out.

        Returns
        -------
        str
            The report, headed "KvikIO I/O summary", each row ending in a newline.
        """
        return self._handle.report(all_rows)

    def __str__(self) -> str:
        return self.report()


class SummaryMonitor:
    """Counts KvikIO's I/O from its creation, for the whole process, until stopped.

    It counts every thread's operations, not those of a block of code: a ``with`` block
    measures that block only while nothing else does I/O. Operations already running when the
    monitor is created are not counted. Any number of monitors may exist at once; each counts
    on its own, and resetting or stopping one leaves the others as they are. Its methods may
    be called while I/O is running, from any thread.

    ::

        with kvikio.SummaryMonitor() as monitor:
            ...  # the I/O to measure
        print(monitor.get())
    """

    __slots__ = ("_handle",)

    def __init__(self):
        """Create a monitor; it counts from now."""
        self._handle = _statistics.SummaryMonitor()

    def get(self) -> Summary:
        """A reading of the totals since creation or the last :meth:`reset`.

        Operations still running are not in it. Reading changes nothing, and may be repeated.

        Returns
        -------
        Summary
            The totals; up to now, or up to :meth:`stop` once stopped.
        """
        return Summary._from_handle(self._handle.get())

    def reset(self) -> None:
        """Start over: zero the totals and start a new span now, as a new monitor would."""
        self._handle.reset()

    def since(self, previous: Summary) -> Summary:
        """The interval since an earlier reading: ``self.get().since(previous)``.

        Parameters
        ----------
        previous
            A reading taken earlier by :meth:`get` of this monitor, since its last reset.

        Returns
        -------
        Summary
            Totals of ``[previous.end_unix_ns, now)``.

        Raises
        ------
        ValueError
            If ``previous`` is not such a reading (see :meth:`Summary.since`).
        """
        return Summary._from_handle(self._handle.since(previous._handle))

    def stop(self) -> None:
        """Stop counting, for good: the span ends here, and later readings stay as it was.

        Waits for callbacks running on other threads to leave the monitor. Calling it again
        does nothing.
        """
        self._handle.stop()

    def __enter__(self) -> "SummaryMonitor":
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.stop()  # an exception of the block goes on

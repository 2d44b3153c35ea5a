"""The library's status codes and the exception every failed status becomes."""
import enum


class Status(enum.IntEnum):
    """amax_status_t (amax_tune.h): the number and, as ``.name``, the name without its prefix."""
    SUCCESS = 0
    INVALID_ARGUMENT = 1
    NULL_POINTER = 2
    MISALIGNED_POINTER = 3
    UNKNOWN_DTYPE = 4
    WORKSPACE_TOO_SMALL = 5
    NOT_PRELOADED = 6
    NO_DEVICE = 7
    COMPILE_FAILED = 8
    DRIVER_ERROR = 9
    TOO_MANY_STREAMS = 10
    INTERNAL_ERROR = 11
    WRONG_DEVICE = 12


class Error(RuntimeError):
    """A status of the C library other than SUCCESS.

    Attributes: ``status`` (a :class:`Status`, or the plain int of a status this package does not
    know), ``message`` (the library's message for the calling thread, amax_last_error()),
    ``function`` (the C function that failed, e.g. ``"amax_context_create"``).
    ``str(e)`` is ``"amax_context_create: AMAX_STATUS_NO_DEVICE (7): <message>"``.
    """

    def __init__(self, status, message, function=""):
        try:
            status = Status(status)
            name = "AMAX_STATUS_" + status.name
        except ValueError:
            name = "AMAX_STATUS_%d" % status
        self.status = status
        self.status_name = name
        self.message = message
        self.function = function
        prefix = function + ": " if function else ""
        super().__init__("%s%s (%d): %s" % (prefix, name, int(status), message))

    def __reduce__(self):
        return (type(self), (int(self.status), self.message, self.function))

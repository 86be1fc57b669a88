"""Exceptions users can catch: bad input versus a run that cannot go on."""


class ConfigError(ValueError):
    """Invalid case or argument: names the field, the value and the allowed range.

    Raised before any work starts; the CLI prints it without a traceback.
    """


class NotARunError(ConfigError):
    """The file or Dataset is readable but not a run of the kind the call takes: not a run of
    meanfield-pde at all (no time axis, no coefficients), or a run without what it needs
    (:func:`meanfield_pde.plotting.plot.plot_run` and ``animate``: no ``density``).

    A ConfigError (and so a ValueError): callers catching those still catch it; the command
    line adds what its command does read by this type, never by the message's text.
    """


class NumericalFault(ArithmeticError):
    """The numerical state cannot be advanced (non-finite values, lost positivity of Φ...).

    The solver turns it into a clean stop that keeps the last good state.
    """


class RunStoppedWarning(RuntimeWarning):
    """A run ended before t_end (lost resolution, numerical fault, interruption).

    ``ds.attrs['status']`` holds the reason; the Dataset holds everything
    computed up to the last good state.
    """


class DiskSpaceWarning(UserWarning):
    """A planned run file would take more than half of the free disk space."""


class SnapshotsDroppedWarning(UserWarning):
    """Snapshots of a damaged run file were dropped before it was resumed
    (``run --resume FILE --drop-damaged``, :func:`meanfield_pde.runs.salvage.drop_damaged`)."""


def printable(text) -> str:
    """``text`` with control and format characters escaped as in ``repr`` (one safe line).

    Error messages quote user text (key and section names, file names,
    values); a newline in it would break the one-line error and an ANSI escape
    (ESC [ 2 J) would clear or recolour the user's terminal. Every message the
    CLI prints goes through here, so no caller has to remember it.
    """
    import unicodedata
    out = []
    for ch in str(text):
        # Cc: C0/C1 controls and DEL; Cf: format (bidi overrides); Zl/Zp: line/paragraph
        # separators; Cs: the surrogates that stand for the bytes of a name that is not UTF-8
        # (printing one raised UnicodeEncodeError)
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            out.append(repr(ch)[1:-1] if ch not in "'\"" else ch)
        else:
            out.append(ch)
    return "".join(out)

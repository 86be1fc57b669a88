"""Exceptions users can catch: bad input versus a run that cannot go on."""


class ConfigError(ValueError):
    """Invalid case or argument: names the field, the value and the allowed range.

    Raised before any work starts; the CLI prints it without a traceback.
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

"""Errors a user can act on. The command line prints them as one line and exits with status 2."""


class Flock3dError(Exception):
    """Base of every expected failure: bad input, a missing or unreadable file."""


class SimulationError(Flock3dError):
    """A step that could not be carried out: a state that blew up, or a user rule that failed.

    The message names the step, the boid and the likely cause. The flock keeps every
    other boid's result of that step; the failing boid keeps its state from before it.
    """


class EngineError(Flock3dError):
    """An engine asked to run what it does not (float32 precision on a CPU engine)."""


class GpuError(Flock3dError):
    """The GPU engine cannot run here (no numba-cuda, no driver, no device) or cannot run this
    flock yet (what it lacks is named)."""

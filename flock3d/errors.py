"""Errors a user can act on. The command line prints them as one line and exits with status 2."""


class Flock3dError(Exception):
    """Base of every expected failure: bad input, a missing or unreadable file."""

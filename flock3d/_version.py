"""The version of flock3d, in a module of its own so that any layer can name it without
importing the package's root (which imports most of the library)."""

__version__ = "0.1.0"

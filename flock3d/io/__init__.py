"""Reading and writing runs: trajectories (HDF5/H5MD), videos, tables of measurements, and
the schedule that plays a flock back as a video."""

from flock3d.io.table import write_csv
from flock3d.io.trajectory import RecordingError, Trajectory, TrajectoryWriter

__all__ = ["RecordingError", "Trajectory", "TrajectoryWriter", "write_csv"]

"""Reading and writing runs: trajectories (HDF5/H5MD) and videos."""

from flock3d.io.trajectory import RecordingError, Trajectory, TrajectoryWriter

__all__ = ["RecordingError", "Trajectory", "TrajectoryWriter"]

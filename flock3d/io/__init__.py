"""Reading and writing runs: trajectories (HDF5/H5MD), videos, tables of measurements, the
schedule that plays a flock back as a video, and exports to other programs' formats."""

# flock3d.io.export is the package of the exporters, and calling it calls its export():
# flock3d.io.export(recording, path).
from flock3d.io import export
from flock3d.io.export import ExportError
from flock3d.io.table import write_csv
from flock3d.io.trajectory import RecordingError, Trajectory, TrajectoryWriter

__all__ = ["ExportError", "RecordingError", "Trajectory", "TrajectoryWriter", "export", "write_csv"]

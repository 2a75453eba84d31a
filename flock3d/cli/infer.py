"""``flock3d infer``: interaction rules fitted to a recording (ours or another program's H5MD)."""

from __future__ import annotations

import argparse
import math
import sys

from flock3d.cli.inputs import outputs
from flock3d.cli.options import metrics_bound, positive_int
from flock3d.cli.words import counted
from flock3d.errors import Flock3dError


def frame_slice(text: str) -> slice:
    """FIRST:LAST[:STEP] as a slice of frame indices (each part optional, negative from the end)."""
    parts = text.split(":")
    try:
        if not 2 <= len(parts) <= 3:
            raise ValueError
        first, last, *rest = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected FIRST:LAST[:STEP] frame indices (a Python slice: 100: or ::10), got {text[:30]!r}"
        ) from None
    step = rest[0] if rest else None
    if step is not None and step < 1:
        raise argparse.ArgumentTypeError(f"STEP must be >= 1, got {step}")
    return slice(first, last, step)


def add_infer(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "infer",
        help="infer interaction rules from a recording (H5MD, ours or another program's)",
        description="Fit a model of how the birds interact to the orientations of a recording.",
    )
    methods = p.add_subparsers(dest="method", metavar="METHOD")
    methods.required = True
    m = methods.add_parser(
        "maxent",
        help="the topological maximum-entropy model of Bialek et al. 2012: J, n_c and the predicted C(r)",
        description="Fit the topological maximum-entropy (Heisenberg) model of Bialek et al., PNAS 109:4786 "
        "(2012) to the flight directions of a recording, in the spin-wave approximation: for each "
        "snapshot the range n_c (each bird aligns with its n_c nearest) and the coupling J that maximize "
        "the likelihood, then their mean over snapshots; and the correlation function C(r) of the "
        "direction fluctuations that the fitted model predicts, against the measured one. Reads "
        "flock3d recordings and H5MD files of other programs (a particles group with position and "
        "velocity). Each snapshot of N boids takes dense N x N algebra: at most 5,000 boids.",
    )
    m.add_argument(
        "trajectory", metavar="TRAJ.h5", help="an H5MD file: `flock3d run --out`, or another program's"
    )
    m.add_argument(
        "--frames",
        type=frame_slice,
        metavar="FIRST:LAST[:STEP]",
        help="the frames to fit, as a Python slice of frame indices, e.g. :: (all) or --frames=-5: "
        "(the last five; with '=' when it starts with '-'); default 10 frames spread evenly over the "
        "second half of the recording",
    )
    m.add_argument(
        "--n-max",
        type=positive_int,
        metavar="K",
        help="try n_c from 1 to K (default 40, or N - 1 if smaller)",
    )
    m.add_argument("--group", metavar="NAME", help="the particles group of an H5MD file holding several")
    m.add_argument(
        "--bins",
        type=metrics_bound("MAX_BINS"),
        default=50,
        help="distance bins of C(r), 0 to L (default 50)",
    )
    m.add_argument("--csv", metavar="OUT.csv", help="write C(r), measured and predicted, per bin")
    m.add_argument("--likelihood", metavar="OUT.csv", help="write the log-likelihood, J and C_int per n_c")
    m.add_argument("--plot", metavar="OUT.png", help="plot the likelihood against n_c and C(r)")
    m.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def run_infer(args: argparse.Namespace) -> int:
    from flock3d import inference
    from flock3d.io import Trajectory, write_csv
    from flock3d.io.measure import fit_recording

    files = outputs(args, csv=".csv", likelihood=".csv", plot=".png")
    with Trajectory(args.trajectory, group=args.group) as traj:
        if traj.n_frames == 0:
            raise Flock3dError(f"{args.trajectory}: the trajectory has no frames")
        if args.frames is None:
            indices = inference.spread_frames(traj.n_frames)
        else:
            indices = range(traj.n_frames)[args.frames]
            if not len(indices):
                raise Flock3dError(f"--frames selects none of the {traj.n_frames:,} frames")
        if traj.n_boids < 3 or traj.n_boids > inference.MAX_BOIDS:
            raise Flock3dError(
                f"{args.trajectory}: {counted(traj.n_boids, 'boid')}; the maximum-entropy fit takes 3 to "
                f"{inference.MAX_BOIDS:,} boids a snapshot"
            )
        n_max = min(inference.N_C_MAX, traj.n_boids - 1) if args.n_max is None else args.n_max
        if n_max > traj.n_boids - 1:
            raise Flock3dError(f"--n-max must be below the number of boids, {traj.n_boids:,} (got {n_max})")
        times = traj.times[indices]
        source = f"scene {traj.scene.name!r}" if traj.scene is not None else f"H5MD group {traj.group}"
        box = traj.period
        try:
            fit = fit_recording(traj, indices, n_max=n_max, bins=args.bins,
                                progress=False if args.no_progress else None)  # fmt: skip
        except ValueError as error:
            raise Flock3dError(f"{args.trajectory}: {error}") from None
    where = _where(box, traj.scene)
    print(
        f"{args.trajectory}: {fit.frames:,} of {traj.n_frames:,} frames (t = {times[0]:g} to {times[-1]:g}), "
        f"{counted(fit.boids, 'boid')} in {where} ({source})"
    )
    several = fit.frames > 1  # a mean over snapshots, with its standard error and spread
    spread = f" ± {fit.n_c_error:.2f} (per frame {fit.frame_n_c.min():g} to {fit.frame_n_c.max():g})"
    print(f"topological maximum-entropy model (Bialek et al. 2012, spin waves), n_c from 1 to {n_max}:")
    print(f"  n_c = {fit.n_c:.2f}{spread if several else ''}")
    j_error = f" ± {fit.J_error:.2g}" if several else ""
    print(f"  J = {fit.J:.3g}{j_error}, J n_c = {fit.J * fit.n_c:.3g}, C_int = {fit.alignment:.5f}")
    print(f"  polarization: measured {fit.polarization:.4f}, predicted {fit.predicted_polarization:.4f}")
    if not fit.polarized:
        print(
            f"flock3d infer: warning: the directions fluctuate by {fit.fluctuation:.2f} (mean square) "
            f"about their group's, over the {inference.MAX_FLUCTUATION:g} a spin-wave fit assumes: this "
            "flock is not polarized (a mill, a swarm?), and n_c and J describe no model of it",
            file=sys.stderr,
        )
    if fit.at_edge:
        print(f"  the likelihood still rises at n_c = {n_max}: try a larger --n-max")
    print("C(r) of the direction fluctuations, in units of their measured mean square:")
    print(f"{'r':>10}{'pairs':>12}{'measured':>11}{'predicted':>11}")
    shown = [b for b, pairs in enumerate(fit.pairs) if pairs > 0]
    for b in shown[:: max(1, math.ceil(len(shown) / 12))]:
        print(f"{fit.r[b]:>10.3g}{int(fit.pairs[b]):>12,}{fit.measured[b]:>11.3f}{fit.predicted[b]:>11.3f}")
    zero = lambda xi: f"{xi:.3g}" if math.isfinite(xi) else f"none below r = {fit.r_max:.3g}"  # noqa: E731
    print(f"first zero xi: measured {zero(fit.xi)}, predicted {zero(fit.predicted_xi)}")
    if files["csv"]:
        write_csv(files["csv"], fit.correlation_table())
        print(f"wrote {files['csv']}")
    if files["likelihood"]:
        write_csv(files["likelihood"], fit.likelihood_table())
        print(f"wrote {files['likelihood']}")
    if files["plot"]:
        from flock3d.plots import plot_maxent

        plot_maxent(fit, files["plot"], title=f"{args.trajectory} ({source})")
        print(f"wrote {files['plot']}")
    return 0


def _where(box, scene) -> str:
    """Where the recorded boids flew: a periodic box's sides, a flock3d scene's arena, else open space."""
    if box is not None:
        return "periodic box " + " x ".join(f"{s:g}" for s in box[box > 0])
    if scene is None or scene.params.arena_shape == "none":
        return "open space"
    shape, radius = scene.params.arena_shape, scene.params.arena_radius
    return f"a sphere of radius {radius:g}" if shape == "sphere" else f"a {shape} arena"

"""``flock3d experiment``: a classic experiment of collective-motion studies, reproduced."""

from __future__ import annotations

import argparse
from pathlib import Path

from flock3d.cli.inputs import require, writable_folder
from flock3d.cli.options import engine_argument, engine_of, seed
from flock3d.errors import Flock3dError


def add_experiment(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from flock3d.experiments import EXPERIMENTS

    listing = "; ".join(f"{e.name}: {e.title} ({e.reference})" for e in EXPERIMENTS.values())
    p = sub.add_parser(
        "experiment",
        help="reproduce a classic experiment of collective-motion studies: a table, a plot, the numbers",
        description="Run an experiment, print its figure next to the paper's, and write NAME.csv and "
        f"NAME.png into --out. The experiments: {listing}.",
    )
    p.add_argument("name", metavar="NAME", choices=list(EXPERIMENTS), help=", ".join(EXPERIMENTS))
    p.add_argument(
        "--out", required=True, metavar="DIR", help="folder for NAME.csv and NAME.png (made if missing)"
    )
    p.add_argument("--quick", action="store_true", help="a small instance that runs in seconds")
    p.add_argument("--seed", type=seed, default=0, help="base seed of the runs (default 0)")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    engine_argument(p, scenes=False)
    return p


def run_experiment_command(args: argparse.Namespace) -> int:
    from flock3d.experiments import EXPERIMENTS, run_experiment
    from flock3d.io import write_csv

    require("plot")  # each experiment draws its figure
    EXPERIMENTS[args.name].require()  # and some render their flocks
    if engine_of(args) == "gpu":  # before the folder is made; what it runs is known at its first flock
        from flock3d.gpu import check_device

        check_device()
    if not args.out.strip():
        raise Flock3dError("--out needs a folder name")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise Flock3dError(f"{args.out}: exists and is not a folder")
    writable_folder(out if out.is_dir() else out.parent, args.out)
    out.mkdir(exist_ok=True)
    e = EXPERIMENTS[args.name]
    print(f"{e.name}: {e.title}\n  reproducing {e.reference}" + (" (quick)" if args.quick else ""))
    result = run_experiment(args.name, quick=args.quick, seed=args.seed,
                            progress=False if args.no_progress else None, engine=engine_of(args))  # fmt: skip
    print("\n".join(result.lines))
    table, image = out / f"{e.name}.csv", out / f"{e.name}.png"
    write_csv(table, result.columns)
    result.plot(image)
    written = [table, image]
    for suffix, write in result.media.items():
        written.append(out / f"{e.name}{suffix}")
        write(written[-1])
    print(f"ran in {result.seconds:.1f} s; wrote {', '.join(map(str, written[:-1]))} and {written[-1]}")
    return 0

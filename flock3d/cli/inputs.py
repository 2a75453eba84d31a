"""What the options name, resolved and checked before any work: the scene, the rules file,
the files to write and the extras a command needs."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from flock3d import extras
from flock3d.errors import Flock3dError


def require(extra: str, modules: Sequence[str] | None = None, option: str = "") -> None:
    """Stop with one line naming the extra to install when a module the command needs is missing
    (:func:`flock3d.extras.require`). ``modules``: the ones needed, if not all of the extra's;
    ``option``: the option that needs them, if not the command itself."""
    extras.require(extra, option, modules)


def rules_from(args: argparse.Namespace) -> tuple[tuple, tuple]:
    """The (rules, forces) of the --rules file, or none."""
    if getattr(args, "rules", None) is None:
        return (), ()
    from flock3d.rules import load_rules

    return load_rules(args.rules)


def rule_names(rules, forces) -> list[str]:
    return [r.name for r in rules] + [f.name for f in forces]


def rules_line(rules, forces) -> str:
    names = rule_names(rules, forces)
    return f"rules: {', '.join(names)}" if names else ""


def check_rules(rules, forces) -> None:
    """Refuse broken rules here, in one line, as a run would before its first step."""
    if rules or forces:
        from flock3d.rules import check_rules

        check_rules(rules, forces)


def scene_from(
    args: argparse.Namespace, name: str | None, rules: tuple[tuple, tuple] | None = None, stepped: bool = True
):
    """The scene named on the command line, with its --set overrides and --seed applied; with
    ``--engine gpu`` and a scene to be ``stepped``, a machine without a GPU is refused first.

    ``rules``: the (rules, forces) it will run with (:func:`rules_from`), so that its
    rules.order is checked against their names here, in one line, rather than when the
    flock is made.
    """
    from flock3d.scene import resolve_scene

    if stepped and getattr(args, "engine", None) == "gpu":  # before the scene's checks compile anything
        from flock3d.gpu import check_device

        check_device()
    names = None if rules is None else rule_names(*rules)
    scene = resolve_scene(name, overrides=args.set, rule_names=names)
    if rules is not None:
        from flock3d.rules import check_model_runs_rules

        check_model_runs_rules(scene.params, *rules)
    return scene if args.seed is None else scene.replace(seed=args.seed)


def outputs(args: argparse.Namespace, **suffixes: str) -> dict[str, Path | None]:
    """The files options ``--NAME=SUFFIX...`` write, checked before any work (None: not asked
    for); a plot needs the plot extra."""
    given = {name: getattr(args, name) for name in suffixes}
    paths = {
        name: None if path is None else output_path(path, (suffixes[name],), f"--{name}")
        for name, path in given.items()
    }
    named: dict[str, str] = {}
    for name, path in paths.items():  # two tables written to one file: the first would be lost
        if path is not None:
            where = os.path.realpath(path)
            if where in named:
                raise Flock3dError(
                    f"{given[name]}: --{named[where]} and --{name} name the same file; give each its own"
                )
            named[where] = name
    if paths.get("plot") is not None:
        require("plot", option="--plot")
    return paths


def output_path(path: str, suffixes: tuple[str, ...], what: str) -> Path:
    """Check an output path before any work is done: a name, the right suffix, a folder that
    exists and takes new files, and no file there that is read-only (which the writer would
    refuse to replace, after the work: :class:`~flock3d.core.atomic.AtomicFile`)."""
    if not path.strip():
        raise Flock3dError(f"{what} needs a file name")
    out = Path(path)
    if out.name.lower() in suffixes:
        raise Flock3dError(f"{path}: {what} needs a file name before {out.name}")
    if out.suffix.lower() not in suffixes:
        raise Flock3dError(f"{path}: {what} must end in {' or '.join(suffixes)}")
    writable_folder(out.parent, path)
    if out.is_dir():
        raise Flock3dError(f"{path}: is a directory")
    if out.exists() and not os.access(out, os.W_OK):
        raise Flock3dError(
            f"{path}: is read-only; it is kept as it is (give another name, or make it writable)"
        )
    return out


def writable_folder(folder: Path, named: str) -> None:
    """Check that ``folder`` (of the output ``named``) exists and takes new files, before any work
    (a file made and dropped at once: what the system allows, for root too, without guessing)."""
    if not folder.is_dir():
        what = f"{folder} is not a folder" if folder.exists() else f"folder {folder} does not exist"
        raise Flock3dError(f"{named}: {what}")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise Flock3dError(f"{named}: cannot write in {folder} ({error.strerror or error})") from None


def recorded_scene(traj, command: str):
    """The scene of a flock3d recording; one line naming the command that reads other files when
    ``traj`` is an H5MD file from another program."""
    if traj.scene is None:
        raise Flock3dError(
            f"{traj.path}: an H5MD file from another program (no flock3d scene): {command} reads "
            "flock3d recordings; `flock3d infer maxent` reads this one"
        )
    return traj.scene


def is_recording(source: str) -> bool:
    """Whether a SOURCE argument names a recorded trajectory (.h5, .hdf5) rather than a scene."""
    return Path(source).suffix.lower() in (".h5", ".hdf5")

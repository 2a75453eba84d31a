"""Parameter sweeps on Dask: every combination of swept values, repeated, one task each.

A sweep over ``--param key=values`` axes runs each combination ``repeats`` times
with its own seed. Each run is a task on a Dask cluster (a local one by default,
any ``dask.distributed`` scheduler on request) and yields one row: the values,
the repeat, the seed, and the mean and standard deviation of polarization and
milling over the kept steps, and the number of groups at the end.

Seeds come from the task's identity (its values and repeat), not its position in
the sweep, so adding values or resuming never changes a finished task's seed.
The output table is rewritten after every finished task; a re-run with the same
output skips every task already in it.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from flock3d.core.atomic import AtomicFile
from flock3d.core.params import is_real_number
from flock3d.errors import Flock3dError
from flock3d.plots import save_figure
from flock3d.scene import Scene, SceneError, parse_scene
from flock3d.scene.scene import parse_value, toml_value, unknown_key_message
from flock3d.scene.schema import KEYS_BY_NAME, Key, check_kind

__all__ = ["Axis", "Task", "parse_axis", "make_tasks", "task_seed", "run_task", "run_sweep", "sweep_size",
           "over_repeats", "plot_sweep", "first_values", "SweepError", "MAX_RUNS"]  # fmt: skip

RESULT_COLUMNS = ["repeat", "seed", "polarization_mean", "polarization_std", "milling_mean", "milling_std",
                  "groups", "steps", "discard", "params_hash", "seconds"]  # fmt: skip


class SweepError(Flock3dError):
    """A sweep that cannot run: a bad --param, an unreadable output, an unreachable scheduler."""


@dataclass(frozen=True)
class Axis:
    """One swept scene key and its values."""

    key: str
    values: tuple


@dataclass(frozen=True)
class Task:
    """One run of the sweep: a value for each axis, a repeat number and its seed."""

    values: tuple
    repeat: int
    seed: int


#: Kinds of scene key a --param can sweep: one value each, written without commas.
SWEEPABLE_KINDS = ("number", "integer", "boolean", "choice")


#: Most runs one sweep may ask for (values of every axis multiplied, times repeats):
#: a typo such as 0:10:1000000000 is refused before any memory is spent on it.
MAX_RUNS = 100_000


def sweep_size(axes: Sequence[Axis], repeats: int) -> int:
    """The number of runs of a sweep; SweepError when it is more than :data:`MAX_RUNS`."""
    runs = math.prod(len(a.values) for a in axes) * repeats
    if runs > MAX_RUNS:
        raise SweepError(
            f"{runs:,} runs ({' x '.join(str(len(a.values)) for a in axes)} values, --repeats {repeats}) "
            f"is more than the {MAX_RUNS:,} a sweep may hold; sweep fewer values"
        )
    return runs


def _typed(key: Key, value: Any, spec: str) -> Any:
    """``value`` as ``key`` holds it: floats for numbers, ints for whole numbers; else SweepError."""
    if key.kind == "number" and is_real_number(value):
        value = float(value)
    elif key.kind == "integer" and is_real_number(value) and float(value).is_integer():
        value = int(value)
    problem = check_kind(key, value)
    if problem:
        raise SweepError(f"--param {spec!r}: {key.name} {problem}")
    return value


def parse_axis(spec: str) -> Axis:
    """``key=start:stop:count`` (evenly spaced, both ends included) or ``key=v1,v2,...``.

    Only model parameters of one value each (numbers, whole numbers, true/false,
    choices) can be swept; values are stored as the key holds them (2 becomes 2.0
    for a number), so that equal values always make the same task.
    """
    name, sep, values = spec.partition("=")
    name = name.strip()
    if not sep or not values.strip():
        raise SweepError(f"--param {spec!r}: expected key=start:stop:count or key=v1,v2,...")
    key = KEYS_BY_NAME.get(name)
    if key is None:
        raise SweepError(f"--param {unknown_key_message(name)}")
    if key.target != "params" or key.kind not in SWEEPABLE_KINDS:
        raise SweepError(
            f"--param {name}: only model parameters of one number, whole number, true/false or "
            "choice can be swept (the seed is swept by --repeats)"
        )
    if ":" in values:
        if key.kind not in ("number", "integer"):
            raise SweepError(f"--param {spec!r}: a start:stop:count range needs a numeric key")
        parts = values.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise SweepError(
                f"--param {spec!r}: a range is start:stop:count, three numbers, e.g. 0:15:16"
            ) from None
        if not (math.isfinite(start) and math.isfinite(stop)):
            raise SweepError(f"--param {spec!r}: a range's start and stop must be finite")
        if count < 2 and not (count == 1 and start == stop):  # both ends are in it
            raise SweepError(
                f"--param {spec!r}: a range holds both its ends, so its count is at least 2 "
                f"(one value: {name}={parts[0]})"
            )
        _check_count(name, count)
        grid = [round(float(v), 12) for v in np.linspace(start, stop, count)]
        typed = tuple(_typed(key, v, spec) for v in grid)
    else:
        texts = values.split(",")
        _check_count(name, len(texts))
        try:
            typed = tuple(_typed(key, parse_value(v), spec) for v in texts)
        except SceneError as error:
            raise SweepError(f"--param {name}: {error.problems[0]}") from None
    repeated = next((v for i, v in enumerate(typed) if v in typed[:i]), None)
    if len(set(typed)) != len(typed):
        raise SweepError(f"--param {spec!r}: the value {toml_value(repeated)} is given twice")
    return Axis(name, typed)


def _check_count(name: str, count: int) -> None:
    if count > MAX_RUNS:
        raise SweepError(f"--param {name}: {count:,} values; a sweep may hold at most {MAX_RUNS:,} runs")


def _canonical(value: Any) -> Any:
    """Numbers as floats, so that 2 and 2.0 seed the same task."""
    return float(value) if is_real_number(value) and not isinstance(value, bool) else value


def task_seed(base_seed: int, values: tuple, repeat: int) -> int:
    """A seed determined by the task alone (the scene's seed, its values and its repeat)."""
    identity = json.dumps([[_canonical(v) for v in values], int(repeat)], sort_keys=True)
    digest = hashlib.sha256(identity.encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    state = np.random.SeedSequence(entropy=[int(base_seed), *words]).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1  # 62 bits: fits int64 tables


def make_tasks(scene: Scene, axes: list[Axis], repeats: int) -> list[Task]:
    """Every combination of the axes' values, ``repeats`` times, each with its own seed."""
    combos = itertools.product(*(axis.values for axis in axes))
    return [Task(values, r, task_seed(scene.seed, values, r)) for values in combos for r in range(repeats)]


def _overrides(axes: list[Axis], values: tuple) -> list[str]:
    return [f"{axis.key}={toml_value(v)}" for axis, v in zip(axes, values, strict=True)]


def first_values(axes: list[Axis]) -> list[str]:
    """The first combination's values as ``--set`` assignments (``key=value``)."""
    return _overrides(axes, tuple(axis.values[0] for axis in axes))


def params_hash(scene: Scene) -> str:
    """A short fingerprint of a scene's model parameters: resumed runs must share it."""
    return hashlib.sha256(repr(scene.params).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=4)
def _worker_rules(path: str) -> tuple:
    """A rules file, loaded once per worker process (tasks on it share the compiled step)."""
    from flock3d.rules import load_rules

    return load_rules(path)


def run_task(
    scene_toml: str,
    overrides: list[str],
    seed: int,
    steps: int,
    discard: int,
    rules: str | None = None,
    engine: str = "fast",
) -> dict:
    """Run one task (on a Dask worker): its measurements as a dict.

    The overrides are applied to the scene's text as ``--set`` would be, so that
    a swept ``model`` brings that model's defaults with it. ``rules`` is the
    path of a rules file (``--rules``), loaded on the worker (so it must see that path);
    ``engine`` steps the flock (``Flock``'s).
    """
    import numba

    from flock3d import metrics
    from flock3d.flock import Flock

    numba.set_num_threads(1)  # one task per core: the cluster parallelises, not the kernel
    scene = parse_scene(scene_toml, overrides=overrides)
    user_rules, forces = _worker_rules(rules) if rules else ((), ())
    flock = Flock.from_scene(scene, seed=seed, rules=user_rules, forces=forces, engine=engine)
    start = time.perf_counter()
    flock.step(discard)
    pol, mill = [], []
    for _ in range(steps - discard):
        flock.step(1)
        pol.append(metrics.polarization(flock.velocities))
        mill.append(metrics.milling(flock.positions, flock.velocities))
    return {
        "polarization_mean": float(np.mean(pol)),
        "polarization_std": float(np.std(pol)),
        "milling_mean": float(np.mean(mill)),
        "milling_std": float(np.std(mill)),
        "groups": metrics.groups(flock.positions, scene.params.perception_distance)[0],
        "seconds": time.perf_counter() - start,
    }


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() == ".parquet"


def _read_table(path: Path):
    import pandas as pd

    if not path.is_file():  # /dev/full reads for ever, a FIFO waits for a writer
        raise SweepError(f"{path}: not a regular file; --out is the results table, read back to resume")
    try:
        if _is_parquet(path):
            return pd.read_parquet(path)
        # The fingerprint stays text even when its hex digits happen to be all decimal.
        return pd.read_csv(path, dtype={"params_hash": str})
    except Exception as error:  # noqa: BLE001 - any unreadable file is the user's to fix
        raise SweepError(
            f"{path}: cannot read the existing results ({type(error).__name__}); move it away"
        ) from None


def _write_table(rows: list[dict], path: Path) -> None:
    """Write atomically: a stopped sweep, or a full disk, never leaves a half-written table."""
    import pandas as pd

    table = pd.DataFrame(rows)
    try:
        with AtomicFile(path) as file:
            if _is_parquet(path):
                table.to_parquet(file.temp, index=False)
            else:
                table.to_csv(file.temp, index=False)
    except OSError as error:
        reason = error.strerror or " ".join(str(error).split())
        raise SweepError(
            f"{path}: cannot write the results ({reason}); the runs written before are kept"
        ) from None


def _resumable_rows(out: Path, columns: list[str], tasks: list[Task], settings: dict) -> list[dict]:
    """The rows of an earlier run of this same sweep in ``out``; SweepError if it is another sweep.

    Same sweep: the same swept keys, the same steps, discard and scene parameters
    (``settings``), and for every run that this sweep also asks for, the same seed.
    """
    old = _read_table(out)
    missing = [c for c in columns + RESULT_COLUMNS if c not in old.columns]
    if missing:
        raise SweepError(
            f"{out}: holds results of another sweep (no column {missing[0]}); choose another --out"
        )
    extra = [c for c in old.columns if c not in columns + RESULT_COLUMNS]
    if extra:
        raise SweepError(
            f"{out}: holds results of another sweep (it also sweeps {extra[0]}); choose another --out"
        )
    import pandas as pd

    rows = old.to_dict("records")
    for k, row in enumerate(rows):  # a row cut short reads as empty cells, not as other settings
        if any(pd.isna(row[name]) for name in (*settings, "repeat", "seed", "seconds")):
            raise SweepError(
                f"{out}: row {k + 1:,} of its results is incomplete (was the file cut short?); "
                "choose another --out, or remove that row to resume"
            )
    what = {"steps": "--steps", "discard": "--discard", "params_hash": "scene parameters (or --rules file)"}
    for name, value in settings.items():
        found = {row[name] for row in rows} - {value}
        if found:
            raise SweepError(
                f"{out}: holds runs made with other {what[name]} ({next(iter(found))!s}, not {value!s}); "
                "choose another --out, or run with the same settings to resume"
            )
    seeds = {(t.values, t.repeat): t.seed for t in tasks}
    for row in rows:
        seed = seeds.get((tuple(row[c] for c in columns), int(row["repeat"])))
        if seed is not None and int(row["seed"]) != seed:
            raise SweepError(
                f"{out}: holds runs made from another seed (another --seed or scene seed); "
                "choose another --out, or run with the same seed to resume"
            )
    return rows


@dataclass
class SweepStats:
    computed: int
    skipped: int
    seconds: float


def run_sweep(
    scene: Scene,
    axes: list[Axis],
    repeats: int,
    steps: int,
    discard: int,
    out: Path,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    overrides: Sequence[str] = (),
    rules: str | Path | None = None,
    engine: str = "fast",
):
    """Run the sweep; returns ``(table, stats)`` (a pandas DataFrame and what was computed).

    Each run is the scene's own text with ``overrides`` (the ``--set`` values that
    made ``scene``) and then the run's swept values applied, exactly as ``flock3d
    run --set`` would build it; its seed comes from :func:`task_seed`. ``engine`` steps
    each run; with "gpu" a local cluster has one worker (the runs share the GPU) unless
    ``workers`` says otherwise.
    """
    from tqdm import tqdm

    if not 0 <= discard < steps:
        raise SweepError(f"--discard must be from 0 to --steps - 1 (got {discard} with --steps {steps})")
    sweep_size(axes, repeats)
    text, overrides = _base_text(scene, overrides)
    tasks = make_tasks(scene, axes, repeats)
    for values in dict.fromkeys(t.values for t in tasks):  # validate every combination first
        try:
            run = parse_scene(text, scene.source or scene.name, [*overrides, *_overrides(axes, values)])
        except SceneError as error:
            raise SweepError(f"the sweep's values do not make a valid scene: {error.problems[0]}") from None
        if engine == "gpu":  # what the GPU engine does not run yet, before any worker starts
            from flock3d.gpu import refusal

            why = refusal(run.params)
            if why:
                raise SweepError(f"{', '.join(_overrides(axes, values))}: {why}")

    columns = [a.key for a in axes]
    fingerprint = params_hash(scene)
    if rules is not None:  # other rules make other runs: a resumed table must share them
        rules = str(Path(rules).resolve())
        fingerprint += "+" + hashlib.sha256(Path(rules).read_bytes()).hexdigest()[:8]
    if engine != "fast":  # another engine's runs differ by rounding: a resumed table must share it
        fingerprint += f"+{engine}"
    settings = {"steps": steps, "discard": discard, "params_hash": fingerprint}
    rows = _resumable_rows(out, columns, tasks, settings) if out.exists() else []
    done = {(tuple(row[c] for c in columns), int(row["repeat"])) for row in rows}
    pending = [t for t in tasks if (t.values, t.repeat) not in done]

    start = time.perf_counter()
    if pending:
        if engine == "gpu" and scheduler is None and workers is None:
            workers = 1
        try:
            with _client(scheduler, workers) as client:
                from dask.distributed import as_completed

                futures = {
                    client.submit(
                        run_task,
                        text,
                        [*overrides, *_overrides(axes, t.values)],
                        t.seed,
                        steps,
                        discard,
                        rules,
                        engine,
                        pure=False,
                    ): t
                    for t in pending
                }
                with tqdm(
                    total=len(pending), unit="task", disable=None if progress is None else not progress
                ) as bar:
                    for future in as_completed(futures):
                        t = futures[future]
                        try:
                            result = future.result()
                        except Exception as error:  # noqa: BLE001 - whatever broke on the worker
                            what = ", ".join(_overrides(axes, t.values))
                            raise SweepError(
                                f"the run {what} (repeat {t.repeat}) failed on its worker "
                                f"({type(error).__name__}: {error}); {_kept(rows, out)}"
                            ) from None
                        identity = {
                            **dict(zip(columns, t.values, strict=True)),
                            "repeat": t.repeat,
                            "seed": t.seed,
                        }
                        rows.append({**identity, **result, **settings})
                        _write_table(rows, out)
                        bar.update()
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the cluster is shut down, the table kept
            # Counted on disk: the signal may have come while the last row's table was being written.
            try:
                rows = _read_table(out).to_dict("records") if out.exists() else []
            except SweepError:  # not readable now (moved, replaced): the rows this run wrote
                pass
            rest = "; the same command runs the rest" if rows else ""
            raise type(stop)(_kept(rows, out) + rest) from None
    elif not out.exists():
        _write_table(rows, out)
    import pandas as pd

    table = pd.DataFrame(rows)
    return table, SweepStats(len(pending), len(tasks) - len(pending), time.perf_counter() - start)


def _kept(rows: list[dict], out: Path) -> str:
    """What a sweep that stops early keeps: its finished runs, written to ``out`` as each ended."""
    n = len(rows)
    return f"the {n} finished run{'s are' if n != 1 else ' is'} kept in {out}" if n else "no run had finished"


def _base_text(scene: Scene, overrides: Sequence[str]) -> tuple[str, list[str]]:
    """The text and overrides each run starts from: the scene's own file and its --set values
    when they still make ``scene``, else the scene written out in full."""
    if scene.text is not None:
        try:
            if parse_scene(scene.text, overrides=overrides).params == scene.params:
                return scene.text, list(overrides)
        except SceneError:
            pass
    return scene.to_toml(), []


#: Seconds to wait for a TCP connection to the scheduler before Dask's own connect.
KNOCK_SECONDS = 5.0


def _knock(address: str) -> None:
    """Open and close a TCP connection to the scheduler at ``address`` first: Dask retries a refused
    connection until its timeout (15 s), where a wrong port is known at once.

    Raises:
        SweepError: nothing answers there; one line, with the reason.
    """
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme not in ("tcp", "tls"):
            return  # Dask's own connect says what is wrong with the others
        host, port = parse_host_port(location)
        socket.create_connection((host, port), timeout=KNOCK_SECONDS).close()
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error) or "no answer"  # "Connection refused"
        raise SweepError(f"cannot reach the Dask scheduler at {address} ({reason})") from None


#: Seconds Dask's client may take to connect to the scheduler and greet it.
CONNECT_SECONDS = 15.0


def _connect(client: type, address: str):
    """A Dask ``client`` of the scheduler at ``address``, connected within :data:`CONNECT_SECONDS`.

    Dask's own timeout covers the connection, not the greeting: against a server that is not a Dask
    scheduler (a web server on that port) its client waited for ever. So it connects on a thread of
    its own, given up when the time is past (a daemon, which leaves with the process).

    Raises:
        SweepError: no Dask scheduler answered there; one line.
    """
    import threading

    done: dict[str, Any] = {}

    def connect() -> None:
        try:
            done["client"] = client(address, timeout=f"{CONNECT_SECONDS:g}s")
        except BaseException as error:  # noqa: BLE001 - raised on the caller's thread below
            done["error"] = error

    thread = threading.Thread(target=connect, name="flock3d-dask-connect", daemon=True)
    thread.start()
    thread.join(CONNECT_SECONDS + KNOCK_SECONDS)
    if "client" in done:
        return done["client"]
    error = done.get("error")
    if error is None:
        raise SweepError(
            f"no Dask scheduler answered at {address} within {CONNECT_SECONDS + KNOCK_SECONDS:g} s"
        )
    if isinstance(error, (OSError, TimeoutError, ValueError)):
        raise SweepError(f"cannot reach the Dask scheduler at {address} ({error})") from None
    if isinstance(error, MemoryError):  # Dask read a frame's length from another server's bytes
        raise SweepError(f"what answers at {address} is not a Dask scheduler") from None
    raise error


class _client:
    """A Dask client: on the scheduler at ``address``, or on a local cluster of processes."""

    def __init__(self, address: str | None, workers: int | None):
        self.address, self.workers, self.cluster = address, workers, None

    def __enter__(self):
        import logging
        import signal

        from dask.distributed import Client, LocalCluster
        from distributed.deploy.spec import SpecCluster

        from flock3d.runner import stop_on_signals

        if self.address:
            _knock(self.address)
            self.client = _connect(Client, self.address)
            return self.client
        # A local cluster stopped while its workers start prints tracebacks after the sweep's one
        # line: a worker's new process finds its parent's semaphore gone, and distributed's exit
        # hook fails an assertion on a starting worker. So Ctrl-C and SIGTERM wait for the start
        # (a few seconds), then close the cluster as after a run; a second one acts at once.
        before = set(SpecCluster._instances)
        try:
            with stop_on_signals() as stop:
                self.cluster = LocalCluster(
                    n_workers=self.workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",  # any free port: None took 8787, and warned when another had it
                    silence_logs=logging.CRITICAL,  # a failed run is one line, not a worker's log
                )
                self.client = Client(self.cluster)
        except BaseException:  # the second signal, or the cluster failed to start
            for cluster in set(SpecCluster._instances) - before:
                _close_quietly(cluster)
            raise
        if stop:
            try:
                self.__exit__(KeyboardInterrupt, None, None)
            finally:
                signal.raise_signal(getattr(signal, stop.signal_name))  # the command's own handler
        return self.client

    def __exit__(self, kind, *exc):
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                if kind is None:
                    self.cluster.close()
                else:  # the sweep's own error or Ctrl-C is what the user is told
                    _close_quietly(self.cluster)


def _close_quietly(cluster) -> None:
    """Close a local Dask cluster, which may be half started (see :class:`_client`), saying
    nothing, and take it off the list of clusters distributed's exit hook closes."""
    import contextlib

    from distributed.deploy.spec import SpecCluster

    try:
        with contextlib.suppress(Exception):
            cluster.close(timeout=10)
    finally:  # a second Ctrl-C ends the closing, not the one line
        SpecCluster._instances.discard(cluster)


#: The columns of a sweep's table that :func:`over_repeats` summarises.
SUMMARISED = ("polarization_mean", "milling_mean")


def over_repeats(table, axes: Sequence[Axis]):
    """Each combination of the swept values once, its repeats summarised.

    Args:
        table: a sweep's table (:func:`run_sweep`), a pandas DataFrame.
        axes: the swept axes.

    Returns:
        A pandas DataFrame, one row per combination, sorted by the swept values: the
        swept keys, then for each of :data:`SUMMARISED` its mean over the repeats (under
        its own name) and their standard deviation (the name + ``_sd``; NaN for a single
        repeat).
    """
    stats = table.groupby([a.key for a in axes])[list(SUMMARISED)].agg(["mean", "std"])
    summary = stats.index.to_frame(index=False)
    for name in SUMMARISED:
        summary[name] = stats[(name, "mean")].to_numpy()
        summary[f"{name}_sd"] = stats[(name, "std")].to_numpy()
    return summary


def plot_sweep(table, axes: list[Axis], path: Path, title: str = "") -> Path:
    """Heatmaps of mean polarization and milling over two axes, or lines with error bars over one."""
    from flock3d.plots import pyplot

    plt = pyplot()
    keys = [a.key for a in axes]
    if len(keys) not in (1, 2):
        raise SweepError(f"--plot draws one or two swept parameters (this sweep has {len(keys)})")
    summary = over_repeats(table, axes)
    if len(keys) == 1:
        fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
        x = summary[keys[0]].to_numpy()
        for name, label in (("polarization_mean", "polarization"), ("milling_mean", "milling")):
            ax.errorbar(x, summary[name], yerr=summary[f"{name}_sd"].fillna(0), marker="o",
                        capsize=3, label=label)  # fmt: skip
        ax.set_xlabel(keys[0])
        ax.set_ylabel("mean over repeats (error bars: sd)")
        ax.set_ylim(-0.02, 1.02)
        ax.legend()
    else:
        fig, axs = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
        for ax, (name, label) in zip(
            axs, (("polarization_mean", "polarization"), ("milling_mean", "milling")), strict=True
        ):
            grid = summary.pivot(index=keys[1], columns=keys[0], values=name)
            image = ax.imshow(grid.to_numpy(), origin="lower", aspect="auto", vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks(
                range(grid.shape[1]), [f"{v:g}" if isinstance(v, float) else v for v in grid.columns]
            )
            ax.set_yticks(range(grid.shape[0]), [f"{v:g}" if isinstance(v, float) else v for v in grid.index])
            ax.set_xlabel(keys[0])
            ax.set_ylabel(keys[1])
            ax.set_title(f"mean {label}")
            fig.colorbar(image, ax=ax)
    if title:
        fig.suptitle(title)
    save_figure(fig, path)
    return path

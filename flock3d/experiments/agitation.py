"""Agitation waves: bands that travel through a flock under a falcon's attack, measured in images.

Hemelrijk, van Zuidam and Hildenbrandt (2015), Behav Ecol Sociobiol 69:755, showed in StarDisplay
that a zig-zag escape by banking, copied by each bird's nearest neighbours after a reaction time,
makes the dark bands seen in starling flocks under attack, travelling away from the predator
faster than the flock flies. Hemelrijk et al. (2019), Behav Ecol Sociobiol 73 (doi
10.1007/s00265-019-2734-4), found the pulses weaken as they go, and in the model that this
follows when the escape's bank decreases along the chain, not when the tendency to copy does.

The design: a flat flock of aerodynamic birds (topological neighbours, k = 7) flies +z, broadside
to its long axis x, with a predator beside its -x end, where the birds escape
(:mod:`flock3d.core.terms.escape`); bands travel +x. Each run is rendered from straight below with
the viewer's renderer, and so is its twin on the same start in which no bird is near enough to
escape (the two fly the same until the first escape). A bird against the sky is a silhouette: the
darkness of the view is the share of the sky the birds cover. The difference of the two runs'
darkness, over strips across x, frame after frame, is a space-time plot (averaged over flocks of
different starts). Its front (where the change first exceeds a quarter of its largest) gives the
band's speed (a Theil-Sen line), the width of the change over half its peak gives the band's width,
the pulses passing the flock's middle are counted, and how strongly the pulse changes each place
as it passes (the largest change there, whenever it comes), along x away from the predator, gives
how it fades as it goes. The 2019 control runs the same with the bank decaying along the copying
chain, and with the probability of copying decaying instead: once with one chance to copy a
neighbour, as it begins its escape, and once with a chance every reaction time while the
neighbour escapes (``escape.looks``).

What the twin's difference also holds: a bird that zig-zagged has moved sideways, so behind the
front the change does not return to zero; in these runs that remainder is smaller than the pulse
that passed, so a place's largest change is the pulse's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flock3d.core.params import Params
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, experiment, new_flock

#: The flock's box (x, y, z) at quick and full size [units]: long along the wave's axis x, thin
#: vertically; one bird per 3 cubic units.
_BOX = {True: (36.0, 3.0, 8.0), False: (80.0, 3.0, 14.0)}
_DENSITY = 1.0 / 3.0
#: Image size (width, height) [pixels] at quick and full size.
_SIZE = {True: (192, 96), False: (480, 240)}
#: Seconds simulated, and every how many steps a frame is rendered.
_SECONDS = {True: 2.4, False: 6.0}
_EVERY = 2
#: Flocks of different starts each run is repeated with: their space-time plots are averaged.
_REPEATS = {True: 3, False: 6}
#: The escape's decay of each control (bank, copy) and the chances a bird has to copy a neighbour
#: (``escape.looks``: 1, as the neighbour begins; 5, every reaction time while its 0.5 s escape
#: lasts), and the names the rows go by.
_VARIANTS = {
    "copied as it was": (1.0, 1.0, 1),
    "bank decays": (0.85, 1.0, 1),
    "copying decays": (1.0, 0.85, 1),
    "copying decays, 5 looks": (1.0, 0.85, 5),
}


def agitation_params(
    n: int, bank_decay: float = 1.0, copy_decay: float = 1.0, looks: int = 1, trigger: float = 4.0
) -> Params:
    """The flock of the experiment: StarDisplay's banked flight with k = 7 topological neighbours, a
    predator that triggers escapes within ``trigger`` units (no fleeing: the escapes alone act)."""
    return Params(
        count=n, arena_shape="none", neighbours=7, view_distance=6.0, separation_distance=1.0, fov=300.0,
        flight="aerodynamic", flight_cruise_speed=5.0, min_speed=3.0, max_speed=8.0, dt=0.02,
        flight_roll_rate=720.0,
        roost_altitude=0.5, roost=(0.0, 0.0, 0.0),
        predator_count=1, predator_speed=5.0, predator_turn_rate=5.0, flee=0.0,
        escape_distance=trigger, escape_bank=60.0, escape_duration=0.5, escape_reaction=0.1, escape_copy=1.0,
        escape_bank_decay=bank_decay, escape_copy_decay=copy_decay, escape_looks=looks,
    )  # fmt: skip


def _start(params: Params, box: tuple[float, float, float], seed: int):
    """The birds uniform in ``box`` heading +z at cruise speed, the predator beside the -x edge."""
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-0.5, 0.5, (params.count, 3)) * np.asarray(box)
    velocities = np.tile([0.0, 0.0, params.flight_cruise_speed], (params.count, 1))
    flock = new_flock(params, positions=positions, velocities=velocities, seed=seed)
    flock.state.predator_positions[0] = [-0.5 * box[0] - 1.0, 0.0, 0.0]
    flock.state.predator_velocities[0] = [0.0, 0.0, params.predator_speed]
    flock.state.predator_orientations[0] = flock.state.orientations[0]
    return flock


@dataclass
class Views:
    """A run seen from below: its frames, the frames' darkness along the axis, and what it flew."""

    frames: list[np.ndarray]
    darkness: np.ndarray
    """(frames, bins) mean darkness of the strip of each bin of x, 0 (sky) to 1."""
    speed: float
    """The birds' mean speed [units/s]."""
    escaped: float
    """The share of the birds that escaped at least once."""


def _seen_from_below(params: Params, box, seed: int, size, seconds: float, centres: np.ndarray | None,
                     bins: np.ndarray, bar) -> tuple[Views, np.ndarray]:  # fmt: skip
    """Fly and render a run from straight below; returns its views and the camera's centres (those
    given, or the flock's centroid each frame, for a twin to be seen from the same places)."""
    from flock3d.scene import Scene, ViewHints
    from flock3d.viewer.offscreen import OffscreenRenderer

    flock = _start(params, box, seed)
    hints = ViewHints(mesh="bird", color_mode="uniform", sky="day", show_arena=False, show_guides=False,
                      boid_size=1.5)  # fmt: skip
    steps = int(round(seconds / params.dt))
    count = steps // _EVERY
    own = np.zeros((count, 3)) if centres is None else centres
    frames, profile, speeds, ever = [], [], [], np.zeros(params.count, dtype=bool)
    with OffscreenRenderer(Scene(params=params, view=hints), size=size, camera="fixed", supersample=1) as r:
        # Straight up from below, x (the wave's axis) across the image, the flock's length filling its width.
        r.camera.elevation, r.camera.azimuth = -90.0, 90.0
        aspect = size[0] / size[1]
        r.camera.distance = 1.1 * box[0] / (2.0 * aspect * math.tan(math.radians(r.camera.fov / 2.0)))
        for k in range(count):
            flock.step(_EVERY)
            bar.update(_EVERY)
            ever |= flock.state.escapes[:, 0] > -1.0
            if centres is None:
                own[k] = flock.positions.mean(axis=0)
            r.camera.center = tuple(own[k])
            image = r.render(flock.state)
            frames.append(image)
            profile.append(_strip_darkness(r, image, own[k], bins, box))
            speeds.append(float(np.mean(np.linalg.norm(flock.velocities, axis=1))))
    return Views(frames, np.array(profile), float(np.mean(speeds)), float(ever.mean())), own


def _strip_darkness(renderer, image: np.ndarray, centre: np.ndarray, bins: np.ndarray, box) -> np.ndarray:
    """(bins - 1,) the darkness of each bin of world x (relative to ``centre``): the share of the
    image's pixels within the flock's strip across it that birds cover, found by projecting the axes."""
    ends = renderer.project(np.array([centre, centre + [1.0, 0.0, 0.0], centre + [0.0, 0.0, 1.0]]))
    along, across = ends[1] - ends[0], ends[2] - ends[0]
    h, w = image.shape[:2]
    rows, cols = np.mgrid[0:h, 0:w]
    offset = np.stack([cols - ends[0][0], rows - ends[0][1]], axis=-1).astype(float)
    x = offset @ along / (along @ along)  # world units along x from the centre
    z = offset @ across / (across @ across)
    # A bird against the sky is a silhouette: what darkens the view is how much of the sky the birds
    # cover. The day sky is drawn blue and the birds in warm colours: a pixel is a bird's where its red
    # exceeds its blue.
    covered = image[..., 0].astype(float) > image[..., 2].astype(float)
    inside = np.abs(z) < 0.5 * box[2] + 1.0
    which = np.digitize(x[inside], bins) - 1
    dark = covered[inside].astype(float)
    ok = (which >= 0) & (which < len(bins) - 1)
    total = np.bincount(which[ok], dark[ok], minlength=len(bins) - 1)
    count = np.bincount(which[ok], minlength=len(bins) - 1)
    return total / np.maximum(count, 1)


#: Where, beyond the point a band begins, its damping is fitted [units] (:attr:`Bands.damping`):
#: the text, the figure's shading and the fit read this one span.
DAMPING_SPAN = (4.0, 20.0)


@dataclass
class Bands:
    """What the space-time plot of a run's change of darkness shows."""

    speed: float
    """The first pulse's front's speed along x [units/s] (Theil-Sen line through where it arrives;
    NaN for a front shorter than 8 units beyond the birds the predator startles)."""
    width: float
    """The band's width along x where the change is over half its peak [units] (median over frames)."""
    pulses: int
    """Pulses that passed the flock's middle: how often the change there rose above half the plot's
    peak."""
    reach: float
    """How far the first pulse went, as a share of the flock's length beyond where it began."""
    damping: float
    """The pulse's strength 10 units farther on, over its strength here (1: undamped). A place's
    strength is the largest change of darkness it sees, whenever the pulse passes it: a slower
    pulse is not a fainter one. Fitted (a Theil-Sen line through its logarithm) from 4 to 20 units
    beyond where the pulse began, past the birds the predator startles itself."""
    fitted: tuple[float, float] = (math.nan, math.nan)
    """Where along x the damping was fitted [units]."""


def _shown(value: float, width: int) -> str:
    """``value`` right-aligned in ``width`` characters with one decimal, or "n/a" for NaN."""
    return f"{value:>{width}.1f}" if math.isfinite(value) else f"{'n/a':>{width}}"


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Theil-Sen: the median of the slopes between every two points (robust to a stray arrival)."""
    i, j = np.triu_indices(len(x), 1)
    ok = x[j] != x[i]
    return float(np.median((y[j] - y[i])[ok] / (x[j] - x[i])[ok])) if np.any(ok) else 0.0


def measure_bands(change: np.ndarray, centres: np.ndarray, times: np.ndarray) -> Bands:
    """The bands of a space-time plot of the change of darkness.

    Args:
        change: (frames, bins) the change of darkness in each bin of x (absolute value).
        centres: (bins,) the bins' centres along x [units], 1 unit apart.
        times: (frames,) the frames' times [s].
    """
    smooth = np.apply_along_axis(lambda row: np.convolve(row, np.ones(3) / 3.0, mode="same"), 1, change)
    peak = max(smooth.max(), 1e-12)
    over = smooth > peak / 4.0
    seen = over.any(axis=0)
    first = np.argmax(over, axis=0)
    origin = int(np.argmin(np.where(seen, first, len(times))))
    ahead = np.flatnonzero(seen & (np.arange(len(centres)) > origin))
    gaps = np.flatnonzero(np.diff(np.concatenate([[origin], ahead])) > 3)
    ahead = ahead[: gaps[0]] if len(gaps) else ahead  # the front goes on without a gap of 3 units
    # Fitted beyond the birds the predator startles itself; a front shorter than 8 units there gives
    # no speed worth the name.
    run = ahead[centres[ahead] > centres[origin] + 4.0]
    speed = _slope(times[first[run]], centres[run]) if len(run) >= 8 else math.nan
    widths = [(row > 0.5 * row.max()).sum() for row in smooth if row.max() > peak / 4.0]
    middle = smooth[:, len(centres) // 2]
    high = middle > 0.5 * peak
    pulses = int(np.sum(high[1:] & ~high[:-1]) + high[0])
    reach = (
        float((centres[ahead].max() - centres[origin]) / (centres[-1] - centres[origin]))
        if len(ahead)
        else 0.0
    )
    strength = smooth.max(axis=0)
    beyond = centres - centres[origin]
    fit = (beyond > DAMPING_SPAN[0]) & (beyond <= DAMPING_SPAN[1]) & (strength > 0.0)
    fall = _slope(centres[fit], np.log(strength[fit])) if fit.sum() > 3 else 0.0
    width = float(np.median(widths)) if widths else 0.0
    fitted = (float(centres[origin] + DAMPING_SPAN[0]), float(centres[origin] + DAMPING_SPAN[1]))
    return Bands(speed, width, pulses, reach, float(np.exp(10.0 * fall)), fitted)


@experiment(
    "agitation-waves",
    "a falcon's attack: banked zig-zags copied by neighbours travel as bands, seen from below",
    "Hemelrijk, van Zuidam and Hildenbrandt (2015), Behav Ecol Sociobiol 69:755; Hemelrijk et al. "
    "(2019), Behav Ecol Sociobiol 73",
    renders=("vispy", "OpenGL", "imageio_ffmpeg"),  # the offscreen renderer, the video's writer
)
def agitation_waves(quick: bool = False, seed: int = 0, progress: bool | None = None) -> Result:
    """Render a flock under attack from below and measure its bands: speed, width, count, damping."""
    box, size, seconds = _BOX[quick], _SIZE[quick], _SECONDS[quick]
    n = int(round(np.prod(box) * _DENSITY))
    bins = np.arange(-0.5 * box[0] - 2.0, 0.5 * box[0] + 2.0 + 1e-9, 1.0)
    centres = 0.5 * (bins[1:] + bins[:-1])
    steps = int(round(seconds / 0.02)) // _EVERY * _EVERY
    repeats = _REPEATS[quick]
    changes = {name: [] for name in _VARIANTS}  # each run's change of darkness, flock after flock
    escaped = {name: [] for name in _VARIANTS}
    speeds, shown = [], {}
    with _bar(steps * (len(_VARIANTS) + 1) * repeats, "agitation-waves", progress) as bar:
        for r in range(repeats):  # flocks alike but for their start: their plots are averaged
            flock_seed = seed * 1000 + r
            still, where = _seen_from_below(agitation_params(n, trigger=1e-6), box, flock_seed, size, seconds,
                                            None, bins, bar)  # fmt: skip
            for name, (bank, copy, looks) in _VARIANTS.items():
                params = agitation_params(n, bank, copy, looks)
                run, _ = _seen_from_below(params, box, flock_seed, size, seconds, where, bins, bar)
                changes[name].append(np.abs(run.darkness - still.darkness))
                escaped[name].append(run.escaped)
                speeds.append(run.speed)
                if r == 0:
                    shown[name] = run.frames
    times = 0.02 * _EVERY * np.arange(1, steps // _EVERY + 1)
    mean_change = {name: np.mean(c, axis=0) for name, c in changes.items()}
    bands = {name: measure_bands(c, centres, times) for name, c in mean_change.items()}
    main = bands["copied as it was"]
    flock_speed = float(np.mean(speeds))
    bank_fade = bands["bank decays"].damping

    def verdict(name: str) -> str:
        """How the band fades when copying decays (row ``name``), beside the bank's decay."""
        fade = bands[name].damping
        if bank_fade < fade - 0.1:
            return "less than under the bank's decay, as in the paper's model"
        side = "about as much as" if abs(bank_fade - fade) <= 0.1 else "more than"
        return f"{side} under the bank's decay, unlike in the paper's model"

    lines = [
        f"  {n} birds, k = 7, banked flight at {flock_speed:.1f} units/s; escapes of 60 deg, 0.5 s, "
        "reaction 0.1 s; seen from below",
        f"  {'run':<24}{'escaped':>8}{'band speed':>11}{'/ flock':>8}{'width':>7}{'pulses':>7}{'reach':>7}"
        f"{'strength per 10 units':>23}",
        *(
            f"  {name:<24}{np.mean(escaped[name]):>8.0%}"
            f"{_shown(b.speed, 11)}{_shown(b.speed / flock_speed, 8)}"
            f"{b.width:>7.1f}{b.pulses:>7d}{b.reach:>7.0%}{b.damping:>23.2f}"
            for name, b in bands.items()
        ),
        f"  band speed {main.speed:.1f} units/s = {main.speed / flock_speed:.1f} x the flock's "
        "(papers: bands travel faster than the flock flies; Hemelrijk et al. 2015 match empirical wave "
        "speeds with 2-7 neighbours copied)",
        f"  the front crosses the flock's {box[0]:g} units in {box[0] / main.speed:.1f} s, a band "
        f"{main.width:.0f} units wide (papers: pulses of about fixed width cross the flock within a second, "
        "Procaccini et al. 2011 and Storms et al. 2019's 182 hunts; StarDisplay's reaction time 76 ms, "
        "here 0.1 s)",
        f"  the pulse's strength changes by x{bank_fade:.2f} per 10 units when the bank decays "
        f"(x{_VARIANTS['bank decays'][0]:g} a copy), x{bands['copying decays'].damping:.2f} when copying "
        f"decays (x{_VARIANTS['copying decays'][1]:g} a copy), "
        f"x{bands['copying decays, 5 looks'].damping:.2f} when it decays and a bird may copy every reaction "
        f"time while a neighbour escapes (5 looks), x{main.damping:.2f} when copied as it was (each fitted "
        f"from {DAMPING_SPAN[0]:g} to {DAMPING_SPAN[1]:g} units beyond where its band began, shaded in the "
        "figure; pulses: how often the change "
        "at the flock's middle rose above half the plot's peak)",
        "  Hemelrijk et al. 2019: pulses weaken as they go; in StarDisplay when the bank decays along the "
        "chain, not when the tendency to copy does.",
        f"  here: the bank's decay weakens every copy ({np.mean(escaped['bank decays']):.0%} of the birds "
        "escape); the copying's decay leaves birds out. With one chance to copy "
        f"({np.mean(escaped['copying decays']):.0%} escape) the band thins as it goes and fades "
        f"{verdict('copying decays')}; with 5 looks ({np.mean(escaped['copying decays, 5 looks']):.0%} "
        f"escape) it fades {verdict('copying decays, 5 looks')}, and stops where too few copy (reach "
        f"{bands['copying decays, 5 looks'].reach:.0%}). How StarDisplay lets a bird copy (once, or while "
        "it watches) is not in the papers' abstracts: the paper's contrast holds for the second.",
    ]
    columns = {
        "run": np.array(list(bands)),
        "escaped": np.array([np.mean(escaped[name]) for name in bands]),
        "flock_speed": np.full(len(bands), flock_speed),
        "band_speed": np.array([b.speed for b in bands.values()]),
        "width": np.array([b.width for b in bands.values()]),
        "pulses": np.array([b.pulses for b in bands.values()]),
        "reach": np.array([b.reach for b in bands.values()]),
        "damping": np.array([b.damping for b in bands.values()]),
    }
    change = mean_change["copied as it was"]

    def plot(path: Path) -> None:
        plt, fig, axes = _figure(2, 7.0)
        image = axes[0].imshow(change.T, origin="lower", aspect="auto", cmap="magma",
                               extent=(times[0], times[-1], centres[0], centres[-1]))  # fmt: skip
        fig.colorbar(image, ax=axes[0], label="change of darkness (share of the sky)")
        title = f"change of darkness seen from below, copied as it was ({repeats} flocks' mean)"
        axes[0].set(xlabel="time [s]", ylabel="x [units]", title=title)
        for name, c in mean_change.items():
            axes[1].plot(centres, c.max(axis=0), label=name)
        axes[1].axvspan(*main.fitted, color="0.9", zorder=0, label="the damping's fit (copied as it was)")
        axes[1].set(xlabel="x [units] (predator at the left)", ylabel="the pulse's strength (largest change)")
        axes[1].legend()
        save_figure(fig, path)

    frames = shown["copied as it was"]

    def video(path: Path) -> None:
        from flock3d.io.video import write_video

        write_video(path, frames, fps=1.0 / (0.02 * _EVERY) / 2.0)

    return Result(columns, lines, plot, media={".mp4": video})

"""Shared helpers for the tests: hand-built flocks and step-by-step comparison."""

from __future__ import annotations

import numpy as np
import pytest

from flock3d import Flock, Params

ENGINES = ["fast", "reference"]


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    """Run a test against both implementations of the step."""
    return request.param


def free_params(**overrides) -> Params:
    """Parameters under which one step is easy to predict by hand.

    No turn limit, no speed clamp that could bind, no confinement: then
    ``v' = v + dt * (S + A + C)`` exactly, so a rule's closed form can be read
    off a single step of either engine.
    """
    base = dict(
        arena_radius=1e6,
        confinement=0.0,
        view_distance=10.0,
        fov=360.0,
        separation_distance=2.0,
        separation=0.0,
        alignment=0.0,
        cohesion=0.0,
        min_speed=0.0,
        max_speed=1e6,
        max_turn_rate=float("inf"),
        dt=0.01,
    )
    base.update(overrides)
    return Params(**base)


def hand_flock(params: Params, positions, velocities, engine: str = "fast") -> Flock:
    return Flock(
        params,
        positions=np.asarray(positions, dtype=float),
        velocities=np.asarray(velocities, dtype=float),
        engine=engine,
    )


def acceleration(flock: Flock) -> np.ndarray:
    """(N, 3) acceleration read back from one step: (v' - v) / dt (exact under free_params)."""
    v0 = flock.velocities.copy()
    flock.step()
    return (flock.velocities - v0) / flock.params.dt


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise angle (radians) between two (N, 3) arrays of vectors."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    cross = np.linalg.norm(np.cross(a, b), axis=-1)
    return np.arctan2(cross, np.sum(a * b, axis=-1))


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache of the test's own for grids and compiled steps (``FLOCK3D_CACHE_DIR``): what it
    caches is neither read from nor left for another test."""
    monkeypatch.setenv("FLOCK3D_CACHE_DIR", str(tmp_path / "cache"))

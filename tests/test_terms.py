"""The registry of built-in terms: one module each, in a fixed order both engines follow."""

from __future__ import annotations

import dataclasses

import pytest

from flock3d.core.fields import Spec, spec_of
from flock3d.core.params import STAGES, TERMS, Attractor, Obstacle, Params, WaypointPath
from flock3d.core.terms import PairTerm

#: The model's order of its terms, written out here rather than read from the code under test.
ORDER = [
    "separation", "alignment", "cohesion", "confinement", "containment", "attractors", "path",
    "obstacles", "flee", "wind", "speed",
]  # fmt: skip

EVERYTHING = Params(
    combine="chain",
    containment=20.0,
    attractors=[Attractor((5.0, 0.0, 0.0))],
    path=WaypointPath(((0.0, 0.0, 0.0), (9.0, 0.0, 0.0)), reach=2.0),
    obstacles=[Obstacle((0.0, 9.0, 0.0), 1.0)],
    predator_count=1,
    wind=(0.0, 0.0, 1.0),
)


def test_the_registry_holds_the_models_terms_in_its_order():
    assert list(STAGES) == ORDER
    assert [t.name for t in TERMS if isinstance(t, PairTerm)] == ["separation", "alignment", "cohesion"]


def test_the_reference_engine_runs_the_terms_in_the_literal_order(monkeypatch):
    from flock3d import Flock

    called = []
    for term in TERMS:
        original = term.reference

        def recording(boid, world, velocity, params, original=original, name=term.name):
            called.append(name)
            return original(boid, world, velocity, params)

        monkeypatch.setattr(term, "reference", recording)
    flock = Flock(EVERYTHING.replace(count=1), seed=1, engine="reference")
    flock.step()
    assert called == ORDER
    called.clear()
    flock.params = flock.params.replace(rule_order=("wind", "cohesion"))
    flock.step()
    assert called == ["wind", "cohesion", *(name for name in ORDER if name not in ("wind", "cohesion"))]


def test_every_field_is_declared_once_and_each_terms_fields_are_its_own():
    specs = {f.name: spec_of(f) for f in dataclasses.fields(Params)}
    assert all(isinstance(s, Spec) for s in specs.values())
    keys = [s.key for s in specs.values()]
    assert len(keys) == len(set(keys)), "two fields share a scene key"
    owned = [name for term in TERMS for name in term.fields]
    assert len(owned) == len(set(owned)), "a field belongs to two terms"
    assert set(owned) <= set(specs)
    for term in TERMS:
        for name in term.switches:
            assert name in term.fields


@pytest.mark.parametrize("term", [t for t in TERMS if t.weight], ids=lambda t: t.name)
def test_a_terms_weight_is_one_of_its_fields(term):
    assert term.weight in term.fields


def test_each_term_is_present_exactly_when_its_fields_turn_it_on():
    plain = {t.name for t in TERMS if t.present(Params())}
    assert plain == {"separation", "alignment", "cohesion", "confinement"}
    assert {t.name for t in TERMS if t.present(EVERYTHING)} == set(ORDER)

"""Scene files: loading, validation messages, round trips, the shipped library."""

import math

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.scene import (
    KEYS,
    Scene,
    SceneError,
    ViewHints,
    load_scene,
    parse_scene,
    resolve_scene,
    shipped_scenes,
)


def problems_of(text: str) -> list[str]:
    with pytest.raises(SceneError) as info:
        parse_scene(text, source="s.toml")
    return info.value.problems


def test_every_key_is_optional():
    scene = parse_scene('name = "only a name"')
    assert scene.params == Params() and scene.view == ViewHints() and scene.seed == 0


def test_keys_map_to_params_and_view():
    scene = parse_scene(
        """
        name = "x"
        seed = 7
        [arena]
        radius = 12.5
        center = [1, 2, 3]
        [perception]
        fov = 200
        view_distance = inf
        [flock]
        count = 42
        max_turn_rate = 90
        [sim]
        dt = 0.02
        [view]
        mesh = "cone"
        show_axes = true
        """
    )
    p = scene.params
    assert (p.arena_radius, p.arena_center, p.fov, p.count, p.max_turn_rate, p.dt) == (
        12.5, (1.0, 2.0, 3.0), 200.0, 42, 90.0, 0.02,
    )  # fmt: skip
    assert math.isinf(p.view_distance)
    assert scene.seed == 7 and scene.view.mesh == "cone" and scene.view.show_axes


@pytest.mark.parametrize("name", shipped_scenes())
def test_shipped_scenes_round_trip_through_toml(name, tmp_path):
    scene = resolve_scene(name)
    assert scene.description, f"{name} needs a description line"
    assert scene.description[0].isupper() or scene.description[0].isdigit(), scene.description
    assert scene.description.endswith("."), scene.description
    again = load_scene(scene.save(tmp_path / "again.toml"))
    assert again == scene
    assert again.to_toml() == scene.to_toml()


def test_round_trip_keeps_every_value_exactly():
    scene = Scene(
        Params(arena_radius=7.123456789, fov=359.9, view_distance=math.inf, dt=1 / 60, init_radius=2.5),
        name='quote " and \\ backslash é',
        description="line\nbreak",
        seed=12345,
        view=ViewHints(camera_distance=80.0, color_mode="speed", show_arena=False),
    )
    assert parse_scene(scene.to_toml()) == scene


def test_schema_covers_every_params_field():
    fields = {k.field for k in KEYS if k.target == "params"}
    assert fields == set(Params.__dataclass_fields__)


def test_syntax_error_names_line_and_column():
    [problem] = problems_of('name = "x"\n[arena]\nradius = \n')
    assert problem.startswith("s.toml: TOML syntax error at line 3, column")


def test_syntax_error_at_end_of_file():
    [problem] = problems_of('name = "x"\nlist = [1, 2')
    assert "TOML syntax error at line 2" in problem and "end of file" in problem


def test_unknown_keys_and_sections_suggest_the_closest():
    problems = problems_of("[perception]\nfvo = 100\n[arean]\nradius = 3\n[flock]\nmax_tunr_rate = 3\n")
    assert "s.toml: perception.fvo: unknown key; did you mean perception.fov?" in problems
    assert "s.toml: flock.max_tunr_rate: unknown key; did you mean flock.max_turn_rate?" in problems
    assert "s.toml: [arean]: unknown section; did you mean [arena]?" in problems


def test_wrong_types_and_ranges_name_key_value_and_range():
    problems = problems_of(
        '[flock]\nmax_turn_rate = -1\nmin_speed = "fast"\ncount = 2.5\n'
        '[rules]\nseparation_distance = 9\n[arena]\ncenter = [1, 2]\n[view]\nmesh = "plane"\n'
    )
    assert "s.toml: flock.max_turn_rate must be > 0 (got -1)" in problems
    assert "s.toml: flock.min_speed must be a number (got 'fast')" in problems
    assert "s.toml: flock.count must be a whole number (got 2.5)" in problems
    assert "s.toml: arena.center must be an array of 3 numbers like [0, 0, 0] (got [1, 2])" in problems
    assert "s.toml: view.mesh must be one of 'dart', 'cone', 'bird' (got 'plane')" in problems
    assert (
        "s.toml: rules.separation_distance must be in (0, perception.view_distance] "
        "(got 9 with perception.view_distance 5.0)"
    ) in problems
    assert len(problems) == 6  # all reported together


def test_cross_key_problem_with_a_default_is_reported():
    [problem] = problems_of("[flock]\nmax_speed = 2\n")
    assert problem == "s.toml: flock.min_speed must be <= flock.max_speed (got 3.0 > 2)"


def test_empty_and_binary_files(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("  \n")
    garbage = tmp_path / "garbage.toml"
    garbage.write_bytes(bytes(range(256)) * 4)
    for path, message in [
        (empty, "empty file"),
        (garbage, "not UTF-8 text"),
        (tmp_path / "no.toml", "no such file"),
    ]:
        with pytest.raises(SceneError, match=message):
            load_scene(path)
    latin = tmp_path / "latin.toml"  # text, in another encoding: named for what it lacks
    latin.write_bytes('name = "Café"\n'.encode("latin-1"))
    with pytest.raises(SceneError, match=r"latin.toml: not UTF-8 text \(byte 11 .* save it as UTF-8"):
        load_scene(latin)


def test_a_scene_file_beginning_with_a_byte_order_mark_reads_as_without(tmp_path):
    # Notepad's UTF-8 files begin with EF BB BF: "TOML syntax error at line 1, column 1".
    text = 'name = "marked"\n[flock]\ncount = 20\n'
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "plain.toml").write_text(text)
    marked, plain = load_scene(tmp_path / "bom.toml"), load_scene(tmp_path / "plain.toml")
    assert marked.name == "marked" and marked.params == plain.params


def test_one_override_may_be_given_as_a_string_alone():
    # A string was taken as its characters: "--set 'f': expected key=value", once a letter.
    one = resolve_scene("default", overrides="flock.count=20")
    assert one.params == resolve_scene("default", overrides=["flock.count=20"]).params
    assert one.params.count == 20


def test_overrides_are_validated_like_the_file():
    scene = resolve_scene(
        "default", overrides=["perception.fov=120", "view.mesh=cone", "arena.center=[1,2,3]"]
    )
    assert scene.params.fov == 120 and scene.view.mesh == "cone" and scene.params.arena_center == (1, 2, 3)
    with pytest.raises(SceneError) as info:
        resolve_scene("default", overrides=["perception.fob=1", "flock.count=abc", "novalue", "name="])
    assert info.value.problems == [
        "shipped:default: perception.fob: unknown key; did you mean perception.fov?",
        "shipped:default: --set 'novalue': expected key=value, e.g. perception.fov=120",
        "shipped:default: --set name: expected a value after '=' (an empty text is written name=\"\")",
        "shipped:default: flock.count must be a whole number (got 'abc')",
    ]


def test_a_field_of_an_array_of_tables_is_not_set_one_by_one_and_the_message_says_so():
    # It read "objects[1].position: unknown key; did you mean roost.position?" (the game-developer walk).
    with pytest.raises(SceneError) as info:
        resolve_scene("worlds/city", overrides=["objects[1].position=[0,0,0]", "path.loop=true"])
    assert info.value.problems == [
        "shipped:worlds/city: --set 'objects[1].position': --set sets a whole key, not a field of objects: "
        "give objects=... whole, or change it in the scene file",
        "shipped:worlds/city: --set 'path.loop': --set sets a whole key, not a field of path: give path=... "
        "whole, or change it in the scene file",
    ]
    whole = resolve_scene(
        "default", overrides=['objects=[{shape = "sphere", radius = 1.0, position = [9, 9, 9]}]']
    )
    assert [o.shape for o in whole.params.objects] == ["sphere"]


@pytest.mark.parametrize(
    "value",
    ["120\n[arena]\nradius = 1e308", "120\r\n[arena]", "1\nperception.fov = 2", "[1,\n2,\n3]"],
    ids=["table", "crlf", "second-key", "multi-line-array"],
)
def test_an_override_is_one_value_on_one_line(value):
    with pytest.raises(SceneError) as info:
        resolve_scene("default", overrides=[f"perception.fov={value}"])
    assert info.value.problems == [
        f"shipped:default: --set perception.fov: expected one TOML value on one line (got {value!r})"
    ]
    with pytest.raises(SceneError) as info:  # a key with a line break is no key
        resolve_scene("default", overrides=["perception\n.fov=1"])
    assert info.value.problems == [
        "shipped:default: --set 'perception\\n.fov=1': expected key=value, e.g. perception.fov=120"
    ]
    # One value, with the spaces and comment a line may hold around it, still reads.
    scene = resolve_scene("default", overrides=["perception.fov = 120 # wide\n", "arena.center=[1, 2, 3]"])
    assert scene.params.fov == 120 and scene.params.arena_center == (1, 2, 3)


def test_rules_order_is_judged_against_the_rules_the_scene_runs_with():
    text = '[rules]\ncombine = "chain"\norder = ["keep_apart", "separation"]\n'
    assert parse_scene(text).params.rule_order == ("keep_apart", "separation")  # rules not known yet
    assert parse_scene(text, rule_names=["keep_apart"]).params.rule_order[0] == "keep_apart"
    with pytest.raises(SceneError) as info:
        parse_scene(text, source="s.toml", rule_names=[])
    assert info.value.problems == [
        "s.toml: rules.order names 'keep_apart', which is no stage of this flock, and no rules of yours "
        "are given (its stages: 'separation', 'alignment', 'cohesion', 'confinement', 'speed')"
    ]
    # A stage the scene lacks is refused whatever the rules; quoted stage names stay as written,
    # the fields in the reason read as keys.
    containment, wind = problems_of('[rules]\ncombine = "chain"\norder = ["containment", "wind"]\n')
    assert containment == (
        "s.toml: rules.order names 'containment', which this flock does not use: it needs "
        "arena.containment > 0 and arena.shape 'sphere' or 'box' (its stages: 'separation', 'alignment', "
        "'cohesion', 'confinement', 'speed')"
    )
    assert wind.startswith(
        "s.toml: rules.order names 'wind', which this flock does not use: it needs a wind.acceleration or "
        "wind.gradient other than zero (its stages: "
    )


def test_shipped_scene_by_name_or_path_and_a_helpful_miss():
    by_name = resolve_scene("torus")
    by_path = resolve_scene("scenes/torus.toml")
    assert by_name == by_path
    with pytest.raises(SceneError, match="did you mean murmuration"):
        resolve_scene("murmeration")


def test_the_library_shows_the_range_of_the_model():
    scenes = {name: resolve_scene(name) for name in shipped_scenes()}
    radii = sorted(s.params.arena_radius for s in scenes.values())
    assert radii[0] <= 10 and radii[-1] >= 200
    density = {n: s.params.count / s.params.arena_radius**3 for n, s in scenes.items()}
    assert density["small-arena"] == pytest.approx(density["default"], rel=0.05)
    assert density["large-arena"] == pytest.approx(density["default"], rel=0.05)
    assert max(s.params.count for s in scenes.values()) >= 20_000
    fovs = [s.params.fov for s in scenes.values()]
    assert min(fovs) <= 90 and max(fovs) == 360
    turns = [s.params.max_turn_rate for s in scenes.values()]
    assert min(turns) <= 45 and max(turns) >= 360


@pytest.mark.slow
@pytest.mark.parametrize("name", shipped_scenes())
def test_every_shipped_scene_runs_100_steps(name):
    params = resolve_scene(name).params
    flock = Flock.from_scene(resolve_scene(name))
    flock.step(100)
    assert flock.step_count == 100 and len(flock) == params.count
    assert np.all(np.isfinite(flock.positions)) and np.all(np.isfinite(flock.velocities))
    flying = flock.state.perches <= 0.0  # a boid resting on the ground is still (perching)
    speeds = np.linalg.norm(flock.velocities, axis=1)[flying]
    if params.model != "boids":  # constant speed
        low = high = np.full(len(flock), params.speed)
    else:  # each boid within its species' limits
        kinds = [params.of_species(k) for k in flock.species]
        low, high = np.array([p.min_speed for p in kinds]), np.array([p.max_speed for p in kinds])
        low, high = low[flying], high[flying]
    chain = params.combine == "chain"
    if not chain or params.rule_order[-1:] in ((), ("speed",)):  # a chain may act after its speed limit
        assert np.all(speeds >= low - 1e-9) and np.all(speeds <= high + 1e-9)


def test_torus_scene_mills():
    from flock3d import metrics

    flock = Flock.from_scene(resolve_scene("torus"))
    flock.step(3600)  # 60 s
    assert metrics.milling(flock.positions, flock.velocities) > 0.8


def test_the_template_lists_every_key_with_its_default():
    import re

    from flock3d.scene import parse_scene, template
    from flock3d.scene.schema import STRUCTURED

    text = template()
    listed, commented, section = {}, set(), None
    for line in text.splitlines():
        header = re.match(r"\s*(#\s*)?\[\[?([\w.]+)\]\]?", line)
        if header:
            section = header[2]
            if header[1] and section in STRUCTURED:  # a structured value, none by default
                commented.add(section)
            continue
        key = re.match(r"\s*(#\s*)?(\w+)\s*=", line)
        if key and section not in STRUCTURED:
            name = key[2] if section is None else f"{section}.{key[2]}"
            if key[1]:
                commented.add(name)
            else:
                listed[name] = line
    assert set(listed) | commented == {k.name for k in KEYS}, "the template must list every scene key"
    assert not set(listed) & commented
    scene = parse_scene(text.encode(), "template")  # the listed values are the defaults
    assert scene.params == Params() and scene.view == ViewHints()
    # Commented out: exactly the keys whose default is unset (None), and the tables (none by default).
    defaults = {k.name: getattr({"params": Params(), "view": ViewHints()}[k.target], k.field)
                for k in KEYS if k.target != "scene"}  # fmt: skip
    unset = {name for name, value in defaults.items() if value is None}
    assert commented == unset | set(STRUCTURED)
    # Words name values as a scene writes them: a choice's in lower case, a model's key by its value.
    assert "# heading (the limit steers the motion) or mesh" in listed["flock.turn_limit"]
    assert '# model = "couzin" only: radius of the zone of repulsion' in listed["zones.repulsion"]


def test_the_shipped_scenes_are_found_when_the_source_checkout_shadows_the_installed_package(monkeypatch):
    # Python started in the repository after 'pip install .' imports the checkout's flock3d,
    # which has no flock3d.scenes package (the data is built from scenes/ beside it).
    from importlib import resources

    from flock3d.scene import scene as scene_module

    files = resources.files

    def without_package_data(name):
        if name == "flock3d.scenes":
            raise ModuleNotFoundError("No module named 'flock3d.scenes'", name=name)
        return files(name)

    monkeypatch.setattr(scene_module.resources, "files", without_package_data)
    assert load_scene("torus").params.count > 0
    assert "worlds/city" in shipped_scenes()


def test_an_empty_scene_name_is_no_scene_not_the_working_folder():
    for name in ("", "  "):  # Path("") is ".": it was refused as "a directory, not a scene file"
        with pytest.raises(SceneError, match="no scene given: name a shipped scene"):
            resolve_scene(name)

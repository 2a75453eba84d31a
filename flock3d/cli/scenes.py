"""The commands that read scenes without running them: ``scenes`` (list them), ``check``
(validate them) and ``debug step`` (the source of a scene's generated step)."""

from __future__ import annotations

import argparse
import sys

from flock3d.cli.errors import EXIT_BAD_INPUT
from flock3d.cli.inputs import check_rules, rule_names, rules_from, scene_from
from flock3d.cli.options import engine_argument, engine_of, rules_argument, scene_argument, set_argument
from flock3d.cli.words import counted
from flock3d.errors import Flock3dError


def add_scenes(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "scenes",
        help="list the scenes shipped with flock3d",
        description="List the shipped scenes; any command taking a SCENE accepts these names.",
    )
    p.add_argument(
        "--template",
        action="store_true",
        help="print instead a scene file listing every key with its default and meaning",
    )
    return p


def run_scenes(args: argparse.Namespace) -> int:
    from flock3d.scene import describe_arena, load_shipped, template

    if args.template:
        print(template(), end="")
        return 0

    loaded, missing = load_shipped()
    names, scenes = [name for name, _ in loaded], [scene for _, scene in loaded]
    arenas = [describe_arena(scene.params) for scene in scenes]
    width, arena_width = max(map(len, names + missing)), max(map(len, arenas))
    for name, scene, arena in zip(names, scenes, arenas, strict=True):
        print(f"{name:<{width}}  {scene.params.count:>8,} boids  {arena:<{arena_width}}  {scene.description}")
    for name in missing:
        print(f"{name:<{width}}  needs the world extra to read its meshes and images: "
              "python -m pip install 'flock3d[world]'")  # fmt: skip
    return 0


def add_check(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check",
        help="validate scene files",
        description="Validate scene files and print every problem found; exit 2 if there is any. "
        "A problem `flock3d run` would refuse a scene for is a problem here. Warnings name what a "
        "scene allows but probably does not mean (an obstacle outside the arena, a wall thinner "
        "than a step's move can be stopped by); they do not change the exit status.",
    )
    scene_argument(p, nargs="+")
    p.add_argument(
        "--rules",
        metavar="FILE.py",
        help="the rules and forces of yours the scenes will run with (as `run --rules`): rules.order may "
        "name them; without it, a name in rules.order that is no built-in stage is a problem",
    )
    return p


def run_check(args: argparse.Namespace) -> int:
    from flock3d.rules import RuleError, check_model_runs_rules
    from flock3d.scene import SceneError, describe_arena, resolve_scene
    from flock3d.scene.advice import advice

    rules, forces = rules_from(args)
    check_rules(rules, forces)  # as a run would, before its first step
    failed = False
    for name in args.scene:
        try:
            scene = resolve_scene(name, rule_names=rule_names(rules, forces))
        except SceneError as error:
            failed = True
            for problem in error.problems:
                print(problem, file=sys.stderr)
            continue
        try:
            check_model_runs_rules(scene.params, rules, forces)  # as the run would, with --rules
        except RuleError as error:
            failed = True
            print(f"{name}: {error}", file=sys.stderr)
            continue
        p = scene.params
        print(f"{name}: ok ({scene.name!r}: {counted(p.count, 'boid')}, {describe_arena(p)}, fov {p.fov:g})")
        for warning in advice(scene):
            print(f"{name}: warning: {warning}", file=sys.stderr)
    return EXIT_BAD_INPUT if failed else 0


def add_debug(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "debug",
        help="show what runs: the generated source of a scene's step",
        description="Print the Python source that flock3d writes and numba compiles for a scene's fast "
        "step (the template of flock3d/core/step/template.py with the scene's terms, rules and "
        "neighbour kind filled in), followed by the values it reads from the value vector.",
    )
    p.add_argument("what", choices=["step"], help="what to show: step (the generated step's source)")
    scene_argument(p)
    set_argument(p)
    rules_argument(p)
    engine_argument(p)
    return p


def run_debug(args: argparse.Namespace) -> int:
    from flock3d.core import assemble

    rules, forces = rules_from(args)
    args.seed = None  # the step does not depend on it
    scene = scene_from(args, args.scene, (rules, forces), stepped=False)  # printed, not stepped
    engine = engine_of(args, scene)
    if engine == "reference":
        raise Flock3dError(
            "the reference engine generates no step (it is flock3d/core/reference.py as written); "
            "debug step shows the fast engine's, or with --engine gpu the GPU's kernel"
        )
    if engine == "gpu":  # the CUDA kernel (flock3d.core.step.cuda_generate)
        from flock3d.gpu import kernel_source

        source, names = kernel_source(scene.params, rules, forces)
    else:
        source, names = assemble.generate(assemble.layout_of(scene.params, rules, forces))
    print(source, end="")
    print(f"\n# pv, the values it reads, in order: {', '.join(names)}")
    return 0

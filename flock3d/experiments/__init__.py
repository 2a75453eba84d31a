"""The classic experiments of collective-motion studies, reproduced: ``flock3d experiment NAME``.

Each experiment is a function of ``(quick, seed, progress)`` that simulates, measures
and returns a :class:`Result`: a table (written as NAME.csv), the lines of its figure
side by side with the paper's (printed), and a plot (written as NAME.png).
``--quick`` runs a small instance in seconds, the one the tests run; the full run is
the reproduction. A new experiment is a function decorated with :func:`experiment`.

- ``couzin-memory``: Couzin et al. (2002), J. theor. Biol. 218:1, collective memory.
- ``cavagna-correlations``: Cavagna et al. (2010), PNAS 107:11865, scale-free correlations.
- ``vicsek-fig2a``: Vicsek et al. (1995), Phys. Rev. Lett. 75:1226, the order-disorder transition.
- ``ballerini-range``: Ballerini et al. (2008), PNAS 105:1232, topological rather than metric interaction.
- ``turning-waves``: Attanasi et al. (2014), Nature Physics 10:691, turns travel as waves in the inertial
  spin model.
- ``flock-shape``: Hemelrijk and Hildenbrandt (2011), PLoS ONE 6:e22479, the shape of flocks flying over a
  roost, and which mechanism makes them thin vertically.
- ``marginal-opacity``: Pearce et al. (2014), PNAS 111:10422, how much of the sky a flock hides,
  with metric, topological and projection-based interaction.
- ``agitation-waves``: Hemelrijk, van Zuidam and Hildenbrandt (2015), Behav Ecol Sociobiol 69:755, and
  Hemelrijk et al. (2019), bands of banked zig-zags under a falcon's attack, measured in rendered images.
"""

# Each module registers its experiments on import, in this order: the order of EXPERIMENTS, which the
# command line lists.
# isort: off
from .common import EXPERIMENTS, Experiment, Result, experiment, polarized_start, run_experiment
from .couzin import couzin_memory
from .cavagna import cavagna_correlations
from .vicsek import vicsek_fig2a
from .ballerini import ballerini_range
from .turning_waves import turning_waves
from .flock_shape import flock_shape
from .pearce import marginal_opacity
from .agitation import agitation_waves
# isort: on

__all__ = [
    "EXPERIMENTS",
    "agitation_waves",
    "Experiment",
    "Result",
    "ballerini_range",
    "cavagna_correlations",
    "couzin_memory",
    "experiment",
    "flock_shape",
    "marginal_opacity",
    "polarized_start",
    "run_experiment",
    "turning_waves",
    "vicsek_fig2a",
]

"""How the commands put counts into words."""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """``n`` ``noun``s, in words: "1 boid", "2,000 boids"."""
    return f"1 {noun}" if n == 1 else f"{n:,} {noun}s"

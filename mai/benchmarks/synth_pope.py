"""synth-pope: coloured shapes on a white canvas with POPE-style yes/no questions (one present and one
absent object per image and category; the absent one drawn by POPE's random, popular or adversarial
negative sampling), exact by construction. Offline and deterministic in the seed: it exercises the
pipeline without the hub, it does not measure a model. Prompt, scoring and agreement are POPE's
(``mai.benchmarks.pope``).
"""
from __future__ import annotations

import math
import random

from PIL import Image, ImageDraw

from mai.benchmarks import register
from mai.benchmarks.pope import PopeScoring
from mai.data import Example, SyntheticBenchmark, subsample_indices

SIZE = 60  # examples before ``limit``: small by design

SHAPE_COLORS = {
    "red": (220, 30, 30),
    "green": (30, 150, 60),
    "blue": (30, 80, 220),
    "yellow": (240, 200, 0),
    "purple": (140, 50, 170),
    "orange": (250, 130, 0),
}
SHAPES = ("circle", "square", "triangle", "star", "diamond", "cross")
POPE_CATEGORIES = ("random", "popular", "adversarial")
_CANVAS = (400, 300)
_GRID = (3, 2)  # columns, rows: one object per cell, so shapes never overlap
_N_THEMES = 4


def _vocabulary() -> list[str]:
    return [f"{c} {s}" for c in SHAPE_COLORS for s in SHAPES]


def _make_scenes(seed: int, n_scenes: int) -> list[list[tuple[str, tuple[int, int, int]]]]:
    """Scenes as lists of (object, (cx, cy, radius)), structured like POPE's COCO images.

    The vocabulary is split into themes (like "kitchen" or "street" in COCO); a scene takes
    most of its objects from one theme, so objects of a theme co-occur (what adversarial
    negatives exploit).  Themes and objects have skewed popularities, so a few objects are
    frequent over the whole set (what popular negatives exploit).
    """
    rng = random.Random(f"synth-pope:{seed}")
    vocab = _vocabulary()
    shuffled = vocab[:]
    rng.shuffle(shuffled)
    themes = [shuffled[t::_N_THEMES] for t in range(_N_THEMES)]
    theme_weight = [1.0 / (t + 1) for t in range(_N_THEMES)]
    weight = {o: 1.0 / (r + 1) ** 0.7 for theme in themes for r, o in enumerate(theme)}
    cw, ch = _CANVAS[0] // _GRID[0], _CANVAS[1] // _GRID[1]
    scenes = []
    for _ in range(n_scenes):
        m = rng.randint(2, 4)
        theme = rng.choices(themes, weights=theme_weight)[0]
        chosen: list[str] = []
        while len(chosen) < m:
            pool = [o for o in (theme if rng.random() < 0.8 else vocab) if o not in chosen]
            pool = pool or [o for o in vocab if o not in chosen]
            chosen.append(rng.choices(pool, weights=[weight[o] for o in pool])[0])
        cells = rng.sample(range(_GRID[0] * _GRID[1]), m)
        placed = []
        for obj, cell in zip(chosen, cells):
            col, row = cell % _GRID[0], cell // _GRID[0]
            r = rng.randint(34, 48)
            cx = col * cw + cw // 2 + rng.randint(-(cw // 2 - r - 4), cw // 2 - r - 4)
            cy = row * ch + ch // 2 + rng.randint(-(ch // 2 - r - 4), ch // 2 - r - 4)
            placed.append((obj, (cx, cy, r)))
        scenes.append(placed)
    return scenes


def _shape_polygon(shape: str, cx: int, cy: int, r: int) -> list[tuple[float, float]]:
    if shape == "triangle":
        return [(cx + r * math.cos(a), cy - r * math.sin(a)) for a in (math.pi / 2, 7 * math.pi / 6, 11 * math.pi / 6)]
    if shape == "diamond":
        return [(cx, cy - r), (cx + 0.7 * r, cy), (cx, cy + r), (cx - 0.7 * r, cy)]
    if shape == "star":
        pts = []
        for k in range(10):
            rad = r if k % 2 == 0 else r * 0.42
            a = math.pi / 2 + k * math.pi / 5
            pts.append((cx + rad * math.cos(a), cy - rad * math.sin(a)))
        return pts
    if shape == "cross":
        t = r * 0.33
        return [
            (cx - t, cy - r), (cx + t, cy - r), (cx + t, cy - t), (cx + r, cy - t), (cx + r, cy + t),
            (cx + t, cy + t), (cx + t, cy + r), (cx - t, cy + r), (cx - t, cy + t), (cx - r, cy + t),
            (cx - r, cy - t), (cx - t, cy - t),
        ]
    raise ValueError(shape)


def render_scene(scene: list[tuple[str, tuple[int, int, int]]]) -> Image.Image:
    img = Image.new("RGB", _CANVAS, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for obj, (cx, cy, r) in scene:
        colour, shape = obj.split()
        fill = SHAPE_COLORS[colour]
        if shape == "circle":
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
        elif shape == "square":
            s = int(r * 0.85)
            draw.rectangle([cx - s, cy - s, cx + s, cy + s], fill=fill)
        else:
            draw.polygon(_shape_polygon(shape, cx, cy, r), fill=fill)
    return img


def pope_negative(category: str, present: list[str], freq: dict, cooc: dict, rng: random.Random) -> str:
    """POPE's negative sampling for one image (k = 1).

    random: any absent object; popular: the absent object most frequent over the whole set;
    adversarial: the absent object that co-occurs most often with the image's objects.
    Ties go to the more frequent object, then to vocabulary order.
    """
    vocab = _vocabulary()
    absent = [o for o in vocab if o not in present]
    if category == "random":
        return rng.choice(absent)
    order = {o: k for k, o in enumerate(vocab)}
    if category == "popular":
        return min(absent, key=lambda o: (-freq[o], order[o]))
    if category == "adversarial":
        return min(absent, key=lambda o: (-sum(cooc[p][o] for p in present), -freq[o], order[o]))
    raise ValueError(f"unknown POPE category {category!r}")


def _article(phrase: str) -> str:
    return "an" if phrase[:1].lower() in "aeiou" else "a"


@register
class SynthPope(PopeScoring, SyntheticBenchmark):
    name = "synth-pope"
    order = 6

    def generate(self, limit, seed):
        per_scene = 2 * len(POPE_CATEGORIES)  # one yes and one no question per category
        scenes = _make_scenes(seed, math.ceil(SIZE / per_scene))
        vocab = _vocabulary()
        objects = [[o for o, _ in s] for s in scenes]
        freq = {o: sum(o in objs for objs in objects) for o in vocab}
        cooc = {p: {o: sum(p in objs and o in objs for objs in objects) for o in vocab} for p in vocab}

        # questions for the whole set first (cheap), so limit / seed only pick among them
        specs = []
        for s, present in enumerate(objects):
            rng = random.Random(f"synth-pope:{seed}:scene:{s}")
            for c, category in enumerate(POPE_CATEGORIES):
                positive = present[c % len(present)]
                negative = pope_negative(category, present, freq, cooc, rng)
                specs.append((s, category, positive, "yes"))
                specs.append((s, category, negative, "no"))
        specs = specs[:SIZE]

        images: dict[int, Image.Image] = {}
        out = []
        for i in subsample_indices(len(specs), limit, seed):
            s, category, obj, answer = specs[i]
            if s not in images:
                images[s] = render_scene(scenes[s])
            out.append(
                Example(
                    id=f"synth-pope-s{seed}-{i:03d}",
                    benchmark=self.name,
                    question=f"Is there {_article(obj)} {obj} in the image?",
                    references=[answer],
                    images=[images[s].copy()],
                    meta={"category": category, "scene": s, "object": obj, "objects": list(objects[s])},
                )
            )
        return out

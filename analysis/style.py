"""One visual language for every figure: seaborn over matplotlib, one colour per system, the paper's units.

- Colours follow the system's role, not its model's name, so 8B-S is the same blue in Figure 1 and in Tables
  7, 8, 10 and 12, whether the run used Qwen3-VL-8B or the CPU preset's tiny-large (`system_role`).
- Accuracy is in % on a 0-100 axis, layers are integers, legends sit outside the axes (they never cover
  data), and no text overlaps (tests/test_figures.py checks every figure after drawing).
- Provenance: one short footer line on the figure (preset, weights, commit); the full note in a sidecar
  JSON next to the figure and in the PNG's metadata. Every figure is written as PNG and as PDF (vector).
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

# seaborn's colour-blind-safe palette (seaborn 0.13, palettes.SEABORN_PALETTES["colorblind"]), one entry
# per role. Roles: a model size (small / mid / large) with its prompt (S: Simple, R: reasoning), and the
# multi-agent systems.
_CB = sns.color_palette("colorblind", 10).as_hex()
SYSTEM_COLORS = {  # in the order legends list them
    "small-S": _CB[9], "small-R": _CB[1], "mid-S": _CB[5], "mid-R": _CB[6], "large-S": _CB[0], "large-R": _CB[4],
    "Full RT": _CB[7], "sparse RT": "#3b3b3b", "speculative": _CB[8], "MAI answer": _CB[2], "MAI reasoning": _CB[3],
}
# Stages (Tables 3-4) and routes (Table 10) are not systems: sequential palettes of their own.
STAGE_COLORS = dict(zip(("preprocess", "vision", "prefill", "decode"), sns.color_palette("crest", 4).as_hex()))
ROUTE_COLORS = dict(zip(("simple", "reasoning", "transfer"), sns.color_palette("flare", 3).as_hex()))
ROUTE_NAMES = {"simple": "agree on Simple answers", "reasoning": "agree after small reasoning",
               "transfer": "reasoning transfer"}
# The claims figure's verdicts (analysis/claims.py): a colour and a marker each, so they read in grey too.
VERDICT_COLORS = {"holds": _CB[2], "does not hold": _CB[3], "cannot tell": "0.55", "not judged": _CB[0]}
FOOTER_RECT = (0, 0.05, 1, 0.95)  # constrained layout leaves the bottom 5% to the footer line
THEME = dict(style="whitegrid", context="paper", font_scale=1.0)


def rc() -> dict:
    """seaborn's whitegrid style and paper context as matplotlib settings, for plt.rc_context: the theme
    applies to our figures only, never to matplotlib elsewhere in the process (synth-chartqa draws its
    charts with matplotlib too)."""
    from cycler import cycler

    return {**sns.axes_style(THEME["style"]), **sns.plotting_context(THEME["context"], THEME["font_scale"]),
            "axes.prop_cycle": cycler(color=sns.color_palette("colorblind")), "axes.titlesize": 10,
            "axes.labelsize": 9, "legend.fontsize": 8, "legend.title_fontsize": 8, "figure.dpi": 100}


def themed(draw):
    """Decorator: draw (and save) a figure under the theme (rc)."""
    @functools.wraps(draw)
    def run(*args, **kw):
        with plt.rc_context(rc()):
            return draw(*args, **kw)
    return run


def figure(nrows: int = 1, ncols: int = 1, width: float = 4.0, height: float = 3.2, **kw):
    """A constrained-layout figure with room at the bottom for the provenance footer (call it inside a
    @themed function)."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             layout="constrained", **kw)
    fig.get_layout_engine().set(rect=FOOTER_RECT)
    return fig, axes


def model_roles(labels, described: dict) -> dict[str, str]:
    """small / mid / large per model label, by parameter count (models.json), else by the order given."""
    labels = list(dict.fromkeys(labels))
    ranked = sorted(labels, key=lambda m: (described.get(m, {}).get("parameters") or 0, labels.index(m)))
    if not all(described.get(m, {}).get("parameters") for m in labels):
        ranked = labels
    if len(ranked) == 1:
        return {ranked[0]: "large"}
    return {m: "small" if i == 0 else "large" if i == len(ranked) - 1 else "mid" for i, m in enumerate(ranked)}


def system_role(kind: str | None, verify: str | None = None) -> str:
    """The colour key of a system from its row kind (experiments' "kind" field)."""
    if kind == "MAI":
        return "MAI reasoning" if verify == "reasoning" else "MAI answer"
    if kind in ("transfer", "Full", "Full RT"):
        return "Full RT"
    if kind == "target":
        return "large-S"
    return kind if kind in SYSTEM_COLORS else "sparse RT"


def color(role: str) -> str:
    return SYSTEM_COLORS.get(role, SYSTEM_COLORS["sparse RT"])


def darker(colour, factor: float = 0.7):
    """A colour's darker shade: text in a system's colour that stays readable on white."""
    return tuple(factor * c for c in matplotlib.colors.to_rgb(colour))


def legend_order(labels, roles) -> list[str]:
    """Labels ordered by their role's place in SYSTEM_COLORS (small to large, then the multi-agent systems)."""
    rank = {r: i for i, r in enumerate(SYSTEM_COLORS)}
    pairs = dict(zip(labels, roles))
    return sorted(pairs, key=lambda label: (rank.get(pairs[label], len(rank)), label))


def benchmark_ticks(ax, rotation: int = 30) -> None:
    """Category tick labels slanted so that long benchmark names never touch."""
    ax.tick_params(axis="x", labelrotation=rotation)
    for t in ax.get_xticklabels():
        t.set_horizontalalignment("right")
        t.set_rotation_mode("anchor")


def short_model(label: str) -> str:
    """'Qwen/Qwen3-VL-8B-Instruct' or '8B' -> '8B'; other labels unchanged."""
    m = re.search(r"(?<![\w.])(\d+(?:\.\d+)?B)\b", str(label).replace("-", " "))
    return m.group(1) if m else str(label)


def percent_axis(ax, axis: str = "y", label: str = "accuracy (%)") -> None:
    """The paper's unit: accuracy in % on a fixed 0-100 axis."""
    (ax.set_ylim if axis == "y" else ax.set_xlim)(0, 100)
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(label)


def log_axis(ax, axis: str = "x") -> None:
    """A log axis labelled in plain numbers, never with crowded minor labels (a range under one decade, as
    the CPU preset's token counts, would otherwise label 3x10^1 next to 4x10^1)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    import math

    target = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = ax.dataLim.intervalx if axis == "x" else ax.dataLim.intervaly  # call it after plotting
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 0.0
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    # 1-2-5 ticks within about a decade; powers of ten alone over a wider range (1 to 1,000 tokens)
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 1.5 else (1.0,)))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


def legend_room(labels) -> float:
    """Inches a one-column legend of these labels takes beside the axes (~0.065 in per character at 8 pt)."""
    return max([len(line) for x in labels for line in str(x).splitlines()] + [6]) * 0.065 + 0.6


def integer_axis(ax, axis: str = "x", nbins: int = 6) -> None:
    """Layers (and other counts) as integers: no tick at 0.5."""
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True, nbins=nbins))


def outside_legend(fig, handles=None, labels=None, title=None, ncol: int | None = None,
                   loc: str = "outside right center"):
    """One figure legend outside every axes (right of them, centred: clear of the title above and the
    footer below); deduplicated by label."""
    if handles is None:
        seen = {}
        for ax in fig.axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if not lab.startswith("_"):
                    seen.setdefault(lab, h)
        labels, handles = list(seen), list(seen.values())
    for ax in fig.axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if handles:
        if ncol is None:  # one column beside the axes; a bottom legend as many columns as the width holds
            per = legend_room(labels)
            ncol = 1 if "right" in loc or "left" in loc else max(1, min(len(labels), int(fig.get_figwidth() * 0.9 / per)))
        fig.legend(handles, labels, title=title, loc=loc, ncol=ncol, frameon=False)


def place_labels(ax, points, texts, colors=None, fontsize: float = 7.5) -> None:
    """Label points without overlaps: each label goes up-right of its point (left of it near the right
    edge), or the nearest free slot above or below, inside the axes. Call it last, once the legend is in
    place, so the axes do not move afterwards."""
    if not len(points):
        return
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box, scale = ax.get_window_extent(renderer), 72 / fig.dpi  # pixels -> points
    placed = []
    for i in sorted(range(len(points)), key=lambda i: (points[i][1], points[i][0])):
        ann = ax.annotate(texts[i], points[i], xytext=(4, 3), textcoords="offset points", fontsize=fontsize,
                          color=darker(colors[i]) if colors else "black", annotation_clip=False)
        ann.set_in_layout(False)
        bb = ann.get_window_extent(renderer)
        dx = 4 if bb.x1 <= box.x1 - 2 else -4 - bb.width * scale
        step = bb.height * scale + 1
        for k in range(40):
            dy = 3 + (k + 1) // 2 * step * (1 if k % 2 else -1) if k else 3
            ann.set_position((dx, dy))
            bb = ann.get_window_extent(renderer)
            inside = box.x0 <= bb.x0 and bb.x1 <= box.x1 and box.y0 <= bb.y0 and bb.y1 <= box.y1
            if inside and not any(bb.overlaps(p) for p in placed):
                break
        placed.append(bb)


def footer(config: dict, described: dict) -> str:
    """One short line: preset, weights, data, device, commit."""
    rand = any(d.get("random_weights") for d in described.values())
    real = any(not d.get("random_weights") for d in described.values())
    weights = "random weights" if rand and not real else "real weights" if real and not rand else "mixed weights"
    prov = config.get("provenance", {})
    device = prov.get("gpu") or "CPU"
    commits = prov.get("git_commit")
    # A figure drawn from several runs names each run's commit (analysis/claims.py, the rows' own provenance).
    commit = (f"commits {', '.join(str(c)[:7] for c in commits)}" if isinstance(commits, list)
              else f"commit {str(commits)[:8]}")
    text = f"{config.get('preset')} preset · {weights} · {device} · {commit}"
    if rand or config.get("preset") != "paper":
        text += " · not the paper's numbers"
    return text + " · more in the .json beside it"


ON_SAVE: list = []  # callables (fig, path) run on every finished figure before it is written


def save(fig, path, config: dict, described: dict, note: str, data: dict | None = None) -> Path:
    """Write the figure as PNG and PDF with a one-line footer, its full provenance in <name>.json beside
    them and in the PNG's metadata; close it; return the PNG's path."""
    path = Path(path)
    line = footer(config, described)
    fig.text(0.005, 0.005, line, fontsize=6.5, color="0.35", ha="left", va="bottom")
    for check in ON_SAVE:  # tests/test_figures.py checks the finished figure here
        check(fig, path)
    sidecar = dict(figure=path.stem, provenance=note, preset=config.get("preset"),
                   experiment=config.get("experiment"), commit=config.get("provenance", {}).get("git_commit"),
                   models={k: {f: v.get(f) for f in ("spec", "random_weights", "parameters", "dtype")}
                           for k, v in described.items()},
                   files=[path.name, path.with_suffix(".pdf").name], data=data or {})
    path.with_suffix(".json").write_text(json.dumps(sidecar, indent=1, default=str) + "\n")
    fig.savefig(path, dpi=150, metadata={"Title": path.stem, "Description": note, "Source": line})
    # No creation date: a rebuilt PDF from the same rows is byte-identical.
    fig.savefig(path.with_suffix(".pdf"), metadata={"Title": path.stem, "Subject": note, "CreationDate": None})
    plt.close(fig)
    return path


def layout_problems(fig) -> list[str]:
    """What a reader would see as broken, after drawing: texts (tick labels, titles, axis labels, legend
    entries, annotations, the footer) that overlap one another or leave the figure, and legends that cover
    an axes. [] for a clean figure."""
    from itertools import combinations

    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    tick_texts, texts = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not ax.get_visible():
                continue
            ticks = axis.get_major_ticks() + axis.get_minor_ticks()
            tick_texts.update(id(t) for tick in ticks for t in (tick.label1, tick.label2))
            for tick in axis._update_ticks():  # only the ticks drawn (inside the view limits)
                texts += [t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text().strip()]
    texts += [t for t in fig.findobj(Text) if id(t) not in tick_texts and t.get_visible() and t.get_text().strip()
              and (t.axes is None or t.axes.get_visible())]
    boxes = [(t, t.get_window_extent(renderer)) for t in texts]
    problems = []
    page = fig.bbox
    for t, b in boxes:
        if b.x0 < page.x0 - 1 or b.x1 > page.x1 + 1 or b.y0 < page.y0 - 1 or b.y1 > page.y1 + 1:
            problems.append(f"text leaves the figure: {t.get_text()!r}")
    for (t1, b1), (t2, b2) in combinations(boxes, 2):
        w, h = min(b1.x1, b2.x1) - max(b1.x0, b2.x0), min(b1.y1, b2.y1) - max(b1.y0, b2.y0)
        if w > 0.5 and h > 0.5:
            problems.append(f"texts overlap: {t1.get_text()!r} and {t2.get_text()!r}")
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for legend in legends:
        lb = legend.get_window_extent(renderer)
        for ax in fig.axes:
            ab = ax.get_window_extent(renderer)
            if ax.get_visible() and min(lb.x1, ab.x1) - max(lb.x0, ab.x0) > 0.5 \
                    and min(lb.y1, ab.y1) - max(lb.y0, ab.y0) > 0.5:
                problems.append(f"a legend covers the axes {ax.get_title()!r}")
    return problems

"""synth-chartqa: bar, line and pie charts drawn with matplotlib, asking for a value, the highest or
lowest category, a sum or a difference, with answers exact by construction. Offline and deterministic in
the seed: it exercises the pipeline without the hub, it does not measure a model. Prompt, scoring and
agreement are ChartQA's (``mai.benchmarks.chartqa``).
"""
from __future__ import annotations

import random

from PIL import Image

from mai.benchmarks import register
from mai.benchmarks.chartqa import ChartQAScoring
from mai.data import Example, SyntheticBenchmark, subsample_indices

SIZE = 60  # examples before ``limit``: small by design

_CHART_LABELS = (
    "Apple", "Birch", "Cedar", "Delta", "Ember", "Falcon", "Grove", "Harbor", "Iris", "Jade",
    "Kite", "Lotus", "Maple", "Nova", "Onyx", "Pine", "Quill", "Raven", "Sage", "Tide",
    "Umber", "Vale", "Willow", "Zinc",
)
_CHART_TITLES = (
    "Units sold", "Survey results", "Annual output", "Visitors per site", "Budget share",
    "Votes by option", "Orders by store", "Energy use",
)
_CHART_KINDS = ("bar", "line", "pie")
BAR_COLOR = "#4c72b0"  # single bar colour (the tests measure bars by it)


def _chart_spec(seed: int, i: int) -> dict:
    rng = random.Random(f"synth-chartqa:{seed}:{i}")
    kind = _CHART_KINDS[i % len(_CHART_KINDS)]
    if kind == "pie":
        k = rng.randint(3, 5)
        while True:  # distinct integer percentages >= 5 that sum to 100
            vals = rng.sample(range(5, 46), k - 1)
            last = 100 - sum(vals)
            if 5 <= last <= 60 and last not in vals:
                values = vals + [last]
                break
    else:
        k = rng.randint(4, 6)
        values = rng.sample(range(5, 96), k)  # distinct, so highest / lowest are unique
    labels = rng.sample(_CHART_LABELS, k)
    data = dict(zip(labels, values))
    qtype = rng.choice(("value", "value", "max", "min", "sum", "diff"))
    if qtype == "value":
        a = rng.choice(labels)
        question, answer = f"What is the value of {a}?", str(data[a])
    elif qtype == "max":
        question, answer = "Which category has the highest value?", max(labels, key=data.__getitem__)
    elif qtype == "min":
        question, answer = "Which category has the lowest value?", min(labels, key=data.__getitem__)
    elif qtype == "sum":
        a, b = rng.sample(labels, 2)
        question, answer = f"What is the sum of {a} and {b}?", str(data[a] + data[b])
    else:
        a, b = sorted(rng.sample(labels, 2), key=data.__getitem__, reverse=True)
        question, answer = f"What is the difference between {a} and {b}?", str(data[a] - data[b])
    return {
        "kind": kind,
        "title": rng.choice(_CHART_TITLES),
        "labels": labels,
        "values": values,
        "qtype": qtype,
        "question": question,
        "answer": answer,
    }


def render_chart(spec: dict) -> Image.Image:
    """Draw a chart spec as a 400x300 RGB image (Agg canvas, no pyplot, no global backend change)."""
    import matplotlib
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels, values = spec["labels"], spec["values"]
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(4, 3), dpi=100)
        canvas = FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        if spec["kind"] == "bar":
            x = range(len(labels))
            ax.bar(x, values, color=BAR_COLOR, width=0.6, antialiased=False)
            for xi, v in zip(x, values):
                ax.text(xi, v + 1.5, str(v), ha="center", va="bottom", fontsize=8)
            ax.set_xticks(list(x), labels, fontsize=8)
            ax.set_ylim(0, max(values) * 1.18)
        elif spec["kind"] == "line":
            x = range(len(labels))
            ax.plot(list(x), values, marker="o", color="#dd8452")
            for xi, v in zip(x, values):
                ax.text(xi, v + 3, str(v), ha="center", va="bottom", fontsize=8)
            ax.set_xticks(list(x), labels, fontsize=8)
            ax.set_ylim(0, max(values) * 1.25)
            ax.set_xlim(-0.5, len(labels) - 0.5)
        else:
            ax.pie(
                values,
                labels=[f"{lab} ({v}%)" for lab, v in zip(labels, values)],
                startangle=90,
                counterclock=False,
                textprops={"fontsize": 8},
            )
            ax.set_aspect("equal")
        ax.set_title(spec["title"], fontsize=10)
        fig.tight_layout(pad=0.4)
        canvas.draw()
        rgba = canvas.buffer_rgba()
        img = Image.frombuffer("RGBA", canvas.get_width_height(), rgba, "raw", "RGBA", 0, 1)
        img = img.convert("RGB")  # copies out of the canvas buffer
    return img


@register
class SynthChartQA(ChartQAScoring, SyntheticBenchmark):
    name = "synth-chartqa"
    order = 5

    def generate(self, limit, seed):
        out = []
        for i in subsample_indices(SIZE, limit, seed):
            spec = _chart_spec(seed, i)
            out.append(
                Example(
                    id=f"synth-chartqa-s{seed}-{i:03d}",
                    benchmark=self.name,
                    question=spec["question"],
                    references=[spec["answer"]],
                    images=[render_chart(spec)],
                    meta={
                        "chart": spec["kind"],
                        "type": "synthetic",
                        "qtype": spec["qtype"],
                        "data": dict(zip(spec["labels"], spec["values"])),
                    },
                )
            )
        return out

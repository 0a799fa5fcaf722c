#!/usr/bin/env python
"""Build the offline, Qwen3-VL-compatible tokenizer shipped in ``mai/assets/tokenizer``.

Real Qwen3-VL tokenizers cannot be downloaded on machines without a model hub, so the
repository ships a small stand-in that reproduces the parts of Qwen's tokenizer that the
code depends on:

* a byte-level BPE (ByteLevel pre-tokenizer with ``add_prefix_space=False``, ByteLevel
  decoder) trained deterministically on the small English corpus embedded below;
* Qwen3-VL's vocabulary layout: ids 0..151642 are regular tokens (the learned BPE
  vocabulary padded with placeholder tokens ``<|p{N}|>``), ids 151643..151668 are Qwen's
  special tokens with their exact ids (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``,
  ``<|vision_start|>``, ``<|image_pad|>``, ``<think>`` ...), and ids 151669..151935 are
  placeholder added tokens, so that ``len(tokenizer) == 151936`` (Qwen3-VL's
  ``vocab_size``) and every id a model can emit decodes;
* ``eos_token='<|im_end|>'``, ``pad_token='<|endoftext|>'``, ``model_max_length=262144`` and
  a ChatML chat template that renders like Qwen3-VL-Instruct's (images become
  ``<|vision_start|><|image_pad|><|vision_end|>``); the template kwarg
  ``enable_thinking=True`` appends ``<think>\\n`` to the generation prompt, as the
  Qwen3-VL Thinking checkpoints do.

The output is deterministic: running the script twice writes byte-identical files.

Usage::

    python scripts/build_tokenizer.py                # writes mai/assets/tokenizer/
    python scripts/build_tokenizer.py --out /tmp/tok
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "mai" / "assets" / "tokenizer"

# ---------------------------------------------------------------------------
# Qwen3-VL vocabulary layout
# ---------------------------------------------------------------------------
VOCAB_SIZE = 151936  # Qwen3-VL text_config.vocab_size == len(tokenizer) here
FIRST_SPECIAL_ID = 151643  # ids below this are regular (BPE-model) tokens
BPE_VOCAB_SIZE = 6000  # target size of the learned BPE vocabulary (256 bytes + merges)

# (token, special) in id order starting at FIRST_SPECIAL_ID; "special" as in Qwen's
# tokenizer_config.json: control tokens are special, <think>/<tool_call>/FIM tokens are not.
QWEN_SPECIAL_TOKENS: list[tuple[str, bool]] = [
    ("<|endoftext|>", True),  # 151643
    ("<|im_start|>", True),  # 151644
    ("<|im_end|>", True),  # 151645
    ("<|object_ref_start|>", True),  # 151646
    ("<|object_ref_end|>", True),  # 151647
    ("<|box_start|>", True),  # 151648
    ("<|box_end|>", True),  # 151649
    ("<|quad_start|>", True),  # 151650
    ("<|quad_end|>", True),  # 151651
    ("<|vision_start|>", True),  # 151652
    ("<|vision_end|>", True),  # 151653
    ("<|vision_pad|>", True),  # 151654
    ("<|image_pad|>", True),  # 151655
    ("<|video_pad|>", True),  # 151656
    ("<tool_call>", False),  # 151657
    ("</tool_call>", False),  # 151658
    ("<|fim_prefix|>", False),  # 151659
    ("<|fim_middle|>", False),  # 151660
    ("<|fim_suffix|>", False),  # 151661
    ("<|fim_pad|>", False),  # 151662
    ("<|repo_name|>", False),  # 151663
    ("<|file_sep|>", False),  # 151664
    ("<tool_response>", False),  # 151665
    ("</tool_response>", False),  # 151666
    ("<think>", False),  # 151667
    ("</think>", False),  # 151668
]


def placeholder(i: int) -> str:
    """Name of the placeholder token that fills id ``i``."""
    return f"<|p{i}|>"


# ---------------------------------------------------------------------------
# Chat template (Qwen3-VL-Instruct ChatML; no default system prompt)
# ---------------------------------------------------------------------------
CHAT_TEMPLATE = (
    "{%- set image_count = namespace(value=0) -%}"
    "{%- set video_count = namespace(value=0) -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}"
    "{{- message['content'] -}}"
    "{%- else -%}"
    "{%- for content in message['content'] -%}"
    "{%- if content['type'] == 'image' or 'image' in content or 'image_url' in content -%}"
    "{%- set image_count.value = image_count.value + 1 -%}"
    "{%- if add_vision_id is defined and add_vision_id -%}"
    "{{- 'Picture ' ~ image_count.value ~ ': ' -}}"
    "{%- endif -%}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif content['type'] == 'video' or 'video' in content -%}"
    "{%- set video_count.value = video_count.value + 1 -%}"
    "{%- if add_vision_id is defined and add_vision_id -%}"
    "{{- 'Video ' ~ video_count.value ~ ': ' -}}"
    "{%- endif -%}"
    "{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- elif 'text' in content -%}"
    "{{- content['text'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and enable_thinking -%}"
    "{{- '<think>\\n' -}}"
    "{%- endif -%}"
    "{%- endif -%}"
)

# ---------------------------------------------------------------------------
# Embedded training corpus
# ---------------------------------------------------------------------------
PROMPTS = [
    "Answer the question using a single word or phrase.",
    "Answer with the option's letter from the given choices directly.",
    "Let's think step by step.",
    "The answer is",
]

BASE_TEXT = """\
Question: What is the value of the tallest bar in the chart?
Answer the question using a single word or phrase.
Answer: 42
Question: Which category has the lowest share in the pie chart?
Answer: Transport
Question: Is the line for 2019 above the line for 2018 in March?
Answer: yes
Question: Does the blue series ever drop below zero?
Answer: no
Question: What is the difference between the highest and the lowest value?
Let's think step by step. The highest value is 87.5 and the lowest value is 12.25.
The difference is 87.5 - 12.25 = 75.25. The answer is 75.25.
Question: How many bars are shown in the figure?
Answer: 7
Question: Which of the following statements is correct?
A. The revenue increased every year.
B. The revenue decreased in 2020.
C. The revenue was constant.
D. The chart does not show revenue.
Answer with the option's letter from the given choices directly.
Answer: B
Question: What percentage of respondents answered "very satisfied"?
Answer: 31%
Question: In which year did the unemployment rate peak?
Answer: 2009
Question: What is the sum of the two smallest values? Round to one decimal place.
Let's think step by step. The two smallest values are 3.4 and 5.1, so the sum is 8.5.
The answer is 8.5.
Question: What is the title of the x-axis?
Answer: Year
Question: What is the unit of the y-axis?
Answer: Millions of dollars
Question: Which country has the highest GDP per capita according to the table?
Answer: Norway
Question: What is the ratio of the largest slice to the smallest slice?
Let's think step by step. The largest slice is 45% and the smallest slice is 5%.
45 / 5 = 9. The answer is 9.
Question: Is the median of the orange bars greater than 50?
Answer: Yes
Question: Are there more than three lines in the plot?
Answer: No
Question: What does the dashed line represent?
Answer: The average
Question: Which month had the most rainfall?
Answer: October
Question: What was the average temperature in July, in degrees Celsius?
Answer: 23.6
Question: Which option best describes the trend?
(A) increasing (B) decreasing (C) stable (D) fluctuating
Answer: A
Question: What is shown in the image?
Answer: A bar chart comparing sales across four regions.
Question: How many people are standing next to the red car?
Answer: 2
Question: What color is the umbrella on the left?
Answer: blue
Question: What is written on the sign?
Answer: STOP
Question: What is the area of the triangle if the base is 10 cm and the height is 6 cm?
Let's think step by step. The area of a triangle is one half of base times height.
0.5 * 10 * 6 = 30. The answer is 30 square centimeters.
Question: If x + 3 = 11, what is x?
Let's think step by step. Subtract 3 from both sides: x = 11 - 3 = 8. The answer is 8.
Question: What is the measure of angle ABC in the diagram?
Answer: 60 degrees
Question: Find the length of side AC. Choices: A: 5 B: 12 C: 13 D: 17
Let's think step by step. By the Pythagorean theorem, AC = sqrt(5^2 + 12^2) = sqrt(169) = 13.
The answer is C.
Reasoning: First, read the labels on both axes. Then locate the relevant data points.
Compare the values carefully, and check the legend to match each color to its series.
Finally, compute the result and state the answer clearly.
The chart shows that sales grew from 1.2 million in 2015 to 3.8 million in 2022, an increase
of more than 200 percent. The strongest growth happened between 2019 and 2021.
According to the table, the population of the city was 1,254,300 in 2010 and 1,398,750 in 2020.
The figure contains a scatter plot with a positive correlation between hours studied and exam score.
Each point represents one student; the regression line has a slope of about 4.2 points per hour.
The map shows the distribution of rainfall across the region, with darker shades meaning more rain.
The diagram illustrates the water cycle: evaporation, condensation, precipitation, and collection.
We can see that the second agent disagrees with the first agent. After reviewing the evidence,
the final answer should be the value supported by the majority of the agents.
Agent 1 says the answer is 14. Agent 2 says the answer is 16. Agent 3 says the answer is 14.
Considering all responses, the most consistent answer is 14.
Here are the answers from other agents. Using their reasoning as additional information,
give an updated answer. Examine your solution and the solutions of the other agents step by step.
The image is a line graph titled "Monthly Active Users (in thousands)" from January to December.
Values: Jan 120, Feb 135, Mar 150, Apr 148, May 162, Jun 180, Jul 175, Aug 190, Sep 205,
Oct 210, Nov 230, Dec 245.
Letters: A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z.
letters: a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z.
Digits: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 25 30 40 50 60 70 80 90 100 1000.
Punctuation: . , ; : ! ? ' " ( ) [ ] { } < > / \\ | - _ + = * & ^ % $ # @ ~ `
system
You are a helpful assistant.
user
What is shown in the chart?
assistant
A bar chart of yearly sales.
The user asks a question about the image and the assistant answers it. The system prompt says:
You are a helpful assistant. The user message contains an image and a question.
Yes. No. yes. no. True. False. Correct. Incorrect. None of the above. All of the above.
"""

# Common English words (each appears in the corpus, lower-case and capitalised).
WORDS = """\
about above across act action activity actually add addition address adult affect after afternoon
again against age agency agent ago agree agreement ahead air airplane airport algebra all allow
almost alone along already also although always amount analysis analyze angle animal another answer
any anyone anything appear apple application apply approach area argue arm around arrive arrow art
article artist ask assume attention audience author available average avoid away axis baby back
background bad bag balance ball banana band bank bar base baseball basket basketball bathroom beach
bear beautiful because become bed bedroom before begin behavior behind believe below bench best
better between beyond bicycle big bike bill billion bird birthday black blank block blood blue board
boat body book border both bottle bottom bowl box boy brain branch bread break bridge bright bring
brother brown budget build building bus business busy but buy cake calculate calendar call camera
can candle capital car card care carry case cat catch cause ceiling cell center central century
certain chair chance change chapter character charge chart cheap check cheese chemical chicken child
choice choose church circle city claim class classroom clean clear clock close clothes cloud coast
coffee cold collect college color column come common community company compare comparison complete
compute computer concept condition consider contain content continue control cook cool corner cost
could count country couple course court cover cow create crime crowd cultural culture cup current
curve customer cut daily dark data date daughter day dead deal death decade decide decimal decision
decrease deep defense degree describe design detail determine develop development diagram die
difference different difficult dinner direction discover discuss disease display distance divide
doctor dog dollar door dot double down draw dream dress drink drive drop during each ear early earth
east easy eat economic economy edge education effect effort egg eight either election electric
element elephant else employee end energy engine enjoy enough enter entire environment equal
equation error especially estimate even evening event every evidence exact example exercise exist
expect experience experiment explain express eye face fact factor fail fall family famous far farm
fast father feature feel female fence few field fifteen fifty fight figure fill film final finally
financial find fine finger finish fire first fish five flag floor flower fly focus follow food foot
football force forest form formula forty forward four fraction frame free fresh friend front fruit
full function future game garden gas general generation giraffe girl give glass goal gold good
government graph grass great green ground group grow growth guess gun hair half hall hand happen
happy hard hat head health hear heart heat heavy height help high highlight hill history hit hold
hole home horizontal horse hospital hot hotel hour house however huge human hundred husband idea
identify image imagine impact important improve include income increase indicate individual industry
information inside instance instead interest interval investment island item itself job join just
keep key kid kind kitchen know knowledge label lake land language large last late later laugh law
lawyer lay lead leader learn least leave left leg legend less letter level life light likely limit
line list listen little live local long look lose loss lot love low machine magazine main maintain
major majority make male man manage many map mark market material matter maximum maybe mean measure
media medical meet meeting member memory mention message method middle might military million mind
minimum minute miss model modern moment money month more morning most mother motorcycle mountain
mouse mouth move movie much multiply music must name nation national natural nature near nearly
necessary need negative network never new news newspaper next nice night nine nobody none normal
north nose note nothing notice number object occur ocean off offer office officer official often oil
old once one only onto open operation opportunity option orange order organization other outside
oven over own owner page pain paint pair paper parent park part particular partner party pass past
path patient pattern pay peace pen pencil people percent percentage perform performance perhaps
period person phone photo physical pick picture piece pizza place plan plane plant plate play player
point police policy political poor popular population position positive possible power practice
prepare present president pressure pretty prevent price probability problem process produce product
production professional program project property protect prove provide public pull purpose push put
quality quarter question quickly quite race radius rain raise range rank rate rather reach read
ready real reality reason receive recent recently record rectangle red reduce reflect region relate
relationship remain remember remove report represent require research resource respond rest result
return reveal rich right rise risk river road rock role room row rule run safe same sample sandwich
save say scale scene school science scientist score screen sea season seat second section security
see seem sell send sense sentence separate series serious serve service set seven several shake
shape share sheep shelf ship shirt shoe shoot short should shoulder show side sign significant
similar simple since sing single sister sit site situation six size skill skin sky slope small smile
snow soccer social society soft soldier solution solve some someone something sometimes son song
soon sort sound source south space speak special species specific speech spend sport spring square
staff stage stand standard star start state statement station stay step still stock stop store story
street strong structure student study stuff style subject success such suddenly suggest summer sun
support sure surface system table tail take talk tall task teacher team technology television tell
ten tend tennis term test than thank theory there these thing think third thirty those though
thought thousand three through throw thus ticket time tire title today together tonight too tool top
total touch toward tower town track trade traditional traffic train training travel treat treatment
tree trend trial triangle trip trouble truck true truth try turn twelve twenty two type under
understand unit until upon use usually utility vacation value various vegetable vehicle version
vertical very victim view visit voice vote wait walk wall want war watch water wave way weapon wear
weather week weight well west what whatever wheel when where whether which while white whole whose
why wide width wife will win wind window winter wish with within without woman wonder word work
worker world worry would write writer wrong yard yeah year yellow yes yet young zebra zero zone
""".split()

SUBJECTS = [
    "revenue", "profit", "population", "temperature", "rainfall", "sales", "income",
    "unemployment rate", "market share", "growth rate", "number of users", "exports",
    "imports", "energy consumption", "life expectancy", "average score", "median price",
    "inflation", "birth rate", "emissions", "production", "spending", "budget", "debt",
    "accuracy", "latency", "throughput", "error rate", "response time", "attendance",
]
CHARTS = [
    "bar chart", "line chart", "pie chart", "scatter plot", "histogram", "table",
    "area chart", "box plot", "heat map", "stacked bar chart", "diagram", "infographic",
    "figure", "graph", "map", "flow chart", "radar chart", "bubble chart",
]
ENTITIES = [
    "China", "India", "United States", "Brazil", "Germany", "France", "Japan", "Canada",
    "Mexico", "Italy", "Spain", "Australia", "Russia", "Nigeria", "Egypt", "Kenya",
    "Sweden", "Norway", "Poland", "Turkey", "Korea", "Vietnam", "Chile", "Peru",
    "North", "South", "East", "West", "Europe", "Asia", "Africa", "America",
    "Apple", "Samsung", "Google", "Amazon", "Microsoft", "Toyota", "Ford", "Tesla",
    "Group A", "Group B", "Group C", "Group D", "Team Red", "Team Blue", "Model X",
]
COLORS = ["red", "blue", "green", "orange", "purple", "yellow", "black", "gray", "pink", "brown"]
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
]
VERBS = [
    "increased", "decreased", "remained stable", "peaked", "dropped", "doubled",
    "fluctuated", "declined", "rose", "fell", "recovered", "stagnated", "surged",
]
QUESTION_FORMS = [
    "What is the {s} of {e} in {y}?",
    "Which entity has the highest {s} in the {c}?",
    "Which entity has the lowest {s} in the {c}?",
    "How much did the {s} of {e} change between {y} and {y2}?",
    "Is the {s} of {e} greater than that of {e2}?",
    "Does the {col} line represent {e}?",
    "In which year did the {s} of {e} reach its maximum?",
    "What is the difference in {s} between {e} and {e2}?",
    "What is the average {s} across all years shown in the {c}?",
    "How many categories in the {c} have a {s} above {v}?",
    "What was the {s} in {m} {y}?",
    "By what percentage did the {s} grow from {y} to {y2}?",
]
STATEMENTS = [
    "The {c} shows that the {s} of {e} {vb} from {v} in {y} to {v2} in {y2}.",
    "In {m} {y}, the {s} of {e} was {v}, compared with {v2} for {e2}.",
    "The {col} bars represent {e}, while the {col2} bars represent {e2}.",
    "According to the {c}, {e} accounts for {p}% of the total {s}.",
    "The {s} {vb} by {p} percent, reaching {v2} at the end of {y2}.",
    "Let's think step by step. {e} has {v} and {e2} has {v2}, so the difference is {d}.",
    "The answer is {v}.",
    "The answer is {e}.",
    "The answer is {l}.",
    "Answer: {yn}",
]


def _number(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return str(rng.randrange(10))
    if kind == 1:
        return str(rng.randrange(100))
    if kind == 2:
        return str(rng.randrange(10000))
    if kind == 3:
        return f"{rng.randrange(1000)}.{rng.randrange(100)}"
    return f"{rng.randrange(1, 1000):,}" if rng.random() < 0.5 else f"{rng.randrange(1000, 10**6):,}"


def build_corpus(n_generated: int = 1500, n_word_lines: int = 2000, seed: int = 0) -> list[str]:
    """The training text (deterministic for a given seed).

    The hand-written base text and prompts, every word of ``WORDS``, ``n_generated``
    templated chart-QA lines and ``n_word_lines`` lines of random ``WORDS``.
    """
    rng = random.Random(seed)
    lines = BASE_TEXT.splitlines() + PROMPTS
    lines.append(" ".join(WORDS))
    lines.append(" ".join(w.capitalize() for w in WORDS))
    for _ in range(n_word_lines):
        words = [rng.choice(WORDS) for _ in range(rng.randrange(4, 12))]
        words[0] = words[0].capitalize()
        lines.append(" ".join(words) + rng.choice([".", ".", ".", "?", "!", ",", ";", ":"]))
    for _ in range(n_generated):
        fields = {
            "s": rng.choice(SUBJECTS),
            "c": rng.choice(CHARTS),
            "e": rng.choice(ENTITIES),
            "e2": rng.choice(ENTITIES),
            "col": rng.choice(COLORS),
            "col2": rng.choice(COLORS),
            "m": rng.choice(MONTHS),
            "vb": rng.choice(VERBS),
            "y": str(rng.randrange(1950, 2031)),
            "y2": str(rng.randrange(1950, 2031)),
            "v": _number(rng),
            "v2": _number(rng),
            "d": _number(rng),
            "p": str(rng.randrange(101)),
            "l": rng.choice("ABCD"),
            "yn": rng.choice(["yes", "no", "Yes", "No"]),
        }
        form = rng.choice(QUESTION_FORMS if rng.random() < 0.5 else STATEMENTS)
        line = form.format(**fields)
        if rng.random() < 0.3:
            line = f"Question: {line} {rng.choice(PROMPTS[:2])}" if line.endswith("?") else line
        lines.append(line)
    return lines


# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------
def train_bpe(corpus: list[str], vocab_size: int = BPE_VOCAB_SIZE):
    """Train the byte-level BPE; returns a ``tokenizers.Tokenizer`` without added tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    return tok


def build_tokenizer(corpus: list[str] | None = None):
    """Return the full ``tokenizers.Tokenizer`` with Qwen3-VL's vocabulary layout."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    trained = train_bpe(build_corpus() if corpus is None else corpus)
    model_json = json.loads(trained.to_str())["model"]
    vocab: dict[str, int] = dict(model_json["vocab"])
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model_json["merges"]]
    n_learned = len(vocab)
    if n_learned >= FIRST_SPECIAL_ID:
        raise ValueError(f"learned vocabulary too large: {n_learned}")
    for i in range(n_learned, FIRST_SPECIAL_ID):
        vocab[placeholder(i)] = i
    if len(vocab) != FIRST_SPECIAL_ID or sorted(vocab.values()) != list(range(FIRST_SPECIAL_ID)):
        raise AssertionError("regular-token ids must be exactly 0..151642")

    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)

    added = [
        AddedToken(t, special=s, normalized=False, lstrip=False, rstrip=False, single_word=False)
        for t, s in QWEN_SPECIAL_TOKENS
    ]
    first_pad = FIRST_SPECIAL_ID + len(QWEN_SPECIAL_TOKENS)
    added += [
        AddedToken(placeholder(i), special=True, normalized=False, lstrip=False, rstrip=False)
        for i in range(first_pad, VOCAB_SIZE)
    ]
    # add_tokens keeps each token's own `special` flag (add_special_tokens would force True).
    tok.add_tokens(added)
    if tok.get_vocab_size(with_added_tokens=True) != VOCAB_SIZE:
        raise AssertionError(tok.get_vocab_size(with_added_tokens=True))
    for offset, (t, _) in enumerate(QWEN_SPECIAL_TOKENS):
        if tok.token_to_id(t) != FIRST_SPECIAL_ID + offset:
            raise AssertionError(f"{t}: {tok.token_to_id(t)}")
    return tok


def tokenizer_config() -> dict:
    """The ``tokenizer_config.json`` contents.

    Mirrors what transformers 5 ``save_pretrained`` writes for this tokenizer: the added
    tokens and their ``special`` flags live in tokenizer.json only, the chat template in
    chat_template.jinja. ``tokenizer_class`` is the generic ``TokenizersBackend`` (alias
    ``PreTrainedTokenizerFast``): ``Qwen2Tokenizer`` would rebuild the pipeline with Qwen's
    own pre-tokenizer regex.
    """
    return {
        "backend": "tokenizers",
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        # Qwen's `additional_special_tokens` (transformers 5 calls them extra_special_tokens).
        "extra_special_tokens": [t for t, special in QWEN_SPECIAL_TOKENS[1:] if special],
        "model_max_length": 262144,
        "pad_token": "<|endoftext|>",
        "tokenizer_class": "TokenizersBackend",
    }


def build(out_dir: str | os.PathLike = DEFAULT_OUT) -> Path:
    """Write tokenizer.json, tokenizer_config.json and chat_template.jinja into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    tok_text = tok.to_str(pretty=False) + "\n"
    (out / "tokenizer.json").write_text(tok_text, encoding="utf-8", newline="\n")
    cfg = tokenizer_config()
    cfg_text = json.dumps(cfg, indent=2, ensure_ascii=False) + "\n"
    (out / "tokenizer_config.json").write_text(cfg_text, encoding="utf-8", newline="\n")
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8", newline="\n")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        help="output directory (default: mai/assets/tokenizer in the repository)",
    )
    args = parser.parse_args(argv)
    out = build(args.out)
    for p in sorted(out.iterdir()):
        print(f"{p}  {p.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()

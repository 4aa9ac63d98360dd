"""Tiny random-weight hub models for the transformers backends, built with no download.

Each ``build_*`` writes a model AND its processor with ``save_pretrained`` into ``out`` so the
backend loads the directory exactly as it would load a hub id. Sizes are the smallest the model
code accepts, so the whole set builds and runs in seconds on a CPU. Tokenizers are built from
in-memory vocabularies (transformers 5 tokenizers accept a vocab dict / merges list).
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import torch

# Enough WordPiece pieces to tokenize any lowercase English text: letters as words and as "##" suffixes.
_BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]"]
_WORDS = ["a", "the", "cat", "dog", "person", "is", "what", "color", "of", "photo", "yes", "no", "red", "blue"]


def _seed() -> None:
    torch.manual_seed(0)


def bert_tokenizer(extra_specials: list[str] | None = None, model_max_length: int = 128) -> Any:
    """A WordPiece BertTokenizer over letters, digits, punctuation and a few whole words."""
    from transformers import BertTokenizer

    pieces = list(string.ascii_lowercase) + list(string.digits) + list(".,?!'-:")
    tokens = _BERT_SPECIALS + [w for w in _WORDS if w not in pieces] + pieces + [f"##{p}" for p in pieces]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    tok = BertTokenizer(vocab=vocab, model_max_length=model_max_length)
    if extra_specials:
        tok.add_special_tokens({"additional_special_tokens": extra_specials})
    return tok


def clip_tokenizer(model_max_length: int = 16) -> Any:
    """A byte-level BPE CLIPTokenizer: every byte with and without ``</w>``, no merges, then the specials."""
    from transformers import CLIPTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    chars = list(bytes_to_unicode().values())
    # Specials last, as in CLIP: OWL treats id 0 as an empty query and pools at the highest id (the end token).
    tokens = chars + [c + "</w>" for c in chars] + ["<|startoftext|>", "<|endoftext|>"]
    vocab = {t: i for i, t in enumerate(tokens)}
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=model_max_length)


def _clip_ids(tok: Any) -> dict[str, int]:
    return dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)


def _bert_ids(tok: Any) -> dict[str, int]:
    return dict(bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id)


def _save(model: Any, processor: Any, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _tiny_vit(**extra: Any) -> dict[str, Any]:
    return dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4, **extra)


def _dual_encoder(config_cls: Any, model_cls: Any, image_processor: Any, processor_cls: Any, out: Path) -> Path:
    """CLIP-shaped models (CLIP, OWL-ViT, OWLv2): tiny ViT towers over a CLIPTokenizer, 32 px images."""
    _seed()
    tok = clip_tokenizer(model_max_length=16)
    cfg = config_cls(
        text_config=_tiny_vit(vocab_size=len(tok), max_position_embeddings=16, **_clip_ids(tok)),
        vision_config=_tiny_vit(image_size=32, patch_size=8),
        projection_dim=32,
    )
    return _save(model_cls(cfg), processor_cls(image_processor, tok), out)


# ------------------------------------------------------------------ detectors
def build_owlv2(out: Path) -> Path:
    from transformers import Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor, Owlv2Processor

    ip = Owlv2ImageProcessor(size={"height": 32, "width": 32})
    return _dual_encoder(Owlv2Config, Owlv2ForObjectDetection, ip, Owlv2Processor, out)


def build_owlvit(out: Path) -> Path:
    from transformers import OwlViTConfig, OwlViTForObjectDetection, OwlViTImageProcessor, OwlViTProcessor

    ip = OwlViTImageProcessor(size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32})
    return _dual_encoder(OwlViTConfig, OwlViTForObjectDetection, ip, OwlViTProcessor, out)


def build_grounding_dino(out: Path) -> Path:
    from transformers import (
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessor,
        GroundingDinoProcessor,
    )

    _seed()
    tok = bert_tokenizer()
    cfg = GroundingDinoConfig(
        backbone_config=dict(
            model_type="swin",
            image_size=64,
            patch_size=4,
            embed_dim=8,
            depths=[1, 1, 1, 1],
            num_heads=[1, 1, 2, 2],
            window_size=2,
            out_indices=[2, 3, 4],
        ),
        text_config=dict(
            model_type="bert",
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=1,
            num_attention_heads=4,
            max_position_embeddings=64,
        ),
        d_model=32,
        num_queries=10,
        encoder_layers=1,
        decoder_layers=2,  # the box head ties layer 0 to the others: needs two
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        num_feature_levels=4,
        encoder_n_points=2,
        decoder_n_points=2,
        max_text_len=32,
        disable_custom_kernels=True,
    )
    ip = GroundingDinoImageProcessor(size={"shortest_edge": 64, "longest_edge": 96})
    return _save(GroundingDinoForObjectDetection(cfg), GroundingDinoProcessor(ip, tok), out)


# ------------------------------------------------------------------------ VQA
def _blip_text_config(tok: Any) -> dict[str, Any]:
    return dict(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=37,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        encoder_hidden_size=32,
        bos_token_id=tok.convert_tokens_to_ids("[DEC]"),
        pad_token_id=tok.pad_token_id,
        sep_token_id=tok.sep_token_id,
        eos_token_id=tok.sep_token_id,
    )


def _build_blip(model_cls_name: str, out: Path) -> Path:
    import transformers
    from transformers import BlipConfig, BlipImageProcessor, BlipProcessor

    _seed()
    tok = bert_tokenizer()
    tok.bos_token = "[DEC]"  # BLIP's text decoder starts from [DEC]
    cfg = BlipConfig(
        text_config=_blip_text_config(tok), vision_config=_tiny_vit(image_size=32, patch_size=8), projection_dim=32
    )
    model = getattr(transformers, model_cls_name)(cfg)
    return _save(model, BlipProcessor(BlipImageProcessor(size={"height": 32, "width": 32}), tok), out)


def build_blip_vqa(out: Path) -> Path:
    return _build_blip("BlipForQuestionAnswering", out)


def build_blip_caption(out: Path) -> Path:
    return _build_blip("BlipForConditionalGeneration", out)


# A random LM may emit its end token first and answer ""; with no end token it fills max_new_tokens,
# so tests can tell a correctly stripped prompt from an empty answer.
_NO_EOS = None


def build_blip2(out: Path, text_model: str = "opt") -> Path:
    """BLIP-2 with a tiny OPT (decoder-only) or T5 (encoder-decoder, like blip2-flan-t5) language model."""
    from transformers import Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, BlipImageProcessor

    _seed()
    tok = bert_tokenizer(extra_specials=["<image>"])
    num_query_tokens = 4
    common = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=_NO_EOS)
    if text_model == "opt":
        text_config = dict(
            model_type="opt",
            hidden_size=32,
            ffn_dim=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=128,
            word_embed_proj_dim=32,
            bos_token_id=tok.cls_token_id,
            **common,
        )
    else:
        text_config = dict(
            model_type="t5",
            d_model=32,
            d_kv=8,
            d_ff=37,
            num_layers=2,
            num_heads=4,
            decoder_start_token_id=tok.pad_token_id,
            **common,
        )
    cfg = Blip2Config(
        vision_config=_tiny_vit(image_size=32, patch_size=8),
        qformer_config=dict(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            encoder_hidden_size=32,
            max_position_embeddings=64,
        ),
        text_config=text_config,
        num_query_tokens=num_query_tokens,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
    )
    proc = Blip2Processor(BlipImageProcessor(size={"height": 32, "width": 32}), tok, num_query_tokens=num_query_tokens)
    return _save(Blip2ForConditionalGeneration(cfg), proc, out)


LLAVA_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() }}: "
    "{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>\n{% else %}{{ item['text'] }}{% endif %}"
    "{% endfor %} {% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def build_llava(out: Path, chat_template: bool = True) -> Path:
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    _seed()
    tok = bert_tokenizer(extra_specials=["<image>"])
    cfg = LlavaConfig(
        vision_config=dict(model_type="clip_vision_model", **_tiny_vit(image_size=32, patch_size=8, projection_dim=32)),
        text_config=dict(
            model_type="llama",
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.cls_token_id,
            eos_token_id=_NO_EOS,
        ),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_seq_length=16,
    )
    ip = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    proc = LlavaProcessor(
        ip,
        tok,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=LLAVA_TEMPLATE if chat_template else None,
    )
    return _save(LlavaForConditionalGeneration(cfg), proc, out)


# ------------------------------------------------------------------- matchers
def build_clip(out: Path) -> Path:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    ip = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    return _dual_encoder(CLIPConfig, CLIPModel, ip, CLIPProcessor, out)


def build_siglip(out: Path) -> Path:
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    _seed()
    tok = bert_tokenizer(model_max_length=16)
    cfg = SiglipConfig(
        text_config=_tiny_vit(vocab_size=len(tok), max_position_embeddings=16, **_bert_ids(tok)),
        vision_config=_tiny_vit(image_size=32, patch_size=8),
    )
    proc = SiglipProcessor(SiglipImageProcessor(size={"height": 32, "width": 32}), tok)
    return _save(SiglipModel(cfg), proc, out)


# ---------------------------------------------------------------------- depth
def build_dpt(out: Path) -> Path:
    from transformers import DPTConfig, DPTForDepthEstimation, DPTImageProcessor

    _seed()
    cfg = DPTConfig(
        **_tiny_vit(image_size=32, patch_size=8),
        is_hybrid=False,
        backbone_out_indices=[0, 1],
        neck_hidden_sizes=[8, 16],
        reassemble_factors=[2, 1],
        fusion_hidden_size=16,
        head_in_index=-1,
    )
    ip = DPTImageProcessor(size={"height": 32, "width": 32})
    return _save(DPTForDepthEstimation(cfg), ip, out)


def build_depth_anything(out: Path) -> Path:
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, DPTImageProcessor

    _seed()
    cfg = DepthAnythingConfig(
        backbone_config=dict(
            model_type="dinov2",
            image_size=28,
            patch_size=14,
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            out_indices=[1, 2],
            apply_layernorm=True,
            reshape_hidden_states=False,
        ),
        patch_size=14,
        reassemble_hidden_size=32,
        reassemble_factors=[2, 1],
        neck_hidden_sizes=[8, 16],
        fusion_hidden_size=16,
        head_hidden_size=8,
    )
    ip = DPTImageProcessor(size={"height": 28, "width": 28}, keep_aspect_ratio=True, ensure_multiple_of=14)
    return _save(DepthAnythingForDepthEstimation(cfg), ip, out)


BUILDERS = {
    "owlv2": build_owlv2,
    "owlvit": build_owlvit,
    "grounding_dino": build_grounding_dino,
    "blip_vqa": build_blip_vqa,
    "blip_caption": build_blip_caption,
    "blip2": build_blip2,
    "blip2_t5": lambda out: build_blip2(out, text_model="t5"),
    "llava": build_llava,
    "clip": build_clip,
    "siglip": build_siglip,
    "dpt": build_dpt,
    "depth_anything": build_depth_anything,
}

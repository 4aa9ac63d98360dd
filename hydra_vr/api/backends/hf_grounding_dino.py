"""Grounding DINO open-vocabulary detection (transformers).

The queries of one call go into one prompt, ``"a cat. a dog."``, and one forward pass. Each box's
score for a query is its highest token probability over that query's tokens (found from the
tokenizer's character offsets), so every detection names the query it matched rather than a
phrase re-decoded from token ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from hydra_vr.api.backends.hf_common import HubDetector, clean_queries
from hydra_vr.api.types import Detection


class GroundingDinoDetector(HubDetector):
    """Detector over ``transformers`` Grounding DINO.

    Options: ``model`` (default IDEA-Research/grounding-dino-tiny), ``threshold`` (min box score
    for its best query, 0.3), ``nms_iou`` (per-query NMS IoU, 0.5; >= 1 disables), ``max_detections``
    (100), plus HubBackend's ``device``/``dtype``/``revision``/``local_files_only``.
    """

    default_model = "IDEA-Research/grounding-dino-tiny"
    source = "grounding_dino"
    default_threshold = 0.3
    default_nms_iou = 0.5

    @staticmethod
    def prompt(queries: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
        """The dotted prompt and each query's character span in it (dots inside a query would split it)."""
        text, spans = "", []
        for q in queries:
            q = " ".join(q.lower().replace(".", " ").split())
            spans.append((len(text), len(text) + len(q)))
            text += q + ". "
        return text.strip(), spans

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        names = clean_queries(queries)
        if not names:
            return []
        image = image.convert("RGB")
        text, spans = self.prompt(names)
        outputs = self.run(images=image, text=text)
        w, h = image.size
        # threshold -1 keeps every box in model order; text_threshold 1 skips phrase decoding we don't use.
        res = self.processor.post_process_grounded_object_detection(
            outputs, outputs.input_ids, threshold=-1.0, text_threshold=1.0, target_sizes=[(h, w)]
        )[0]
        per_query = self._query_probs(outputs.logits[0].sigmoid().cpu(), text, spans)  # (n_boxes, n_queries)
        scores, idx = per_query.max(dim=1)
        keep = scores > self.threshold
        return self.to_detections(res["boxes"][keep], scores[keep], idx[keep], names, image)

    def _query_probs(self, probs: Any, text: str, spans: list[tuple[int, int]]) -> Any:
        """(n_boxes, n_queries): each box's max token probability within each query's character span."""
        import torch

        enc = self.processor.tokenizer(text, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        cols = []
        for start, end in spans:
            toks = [i for i, (s, e) in enumerate(offsets) if e > s and s < end and e > start and i < probs.shape[1]]
            cols.append(probs[:, toks].max(dim=1).values if toks else torch.zeros(probs.shape[0]))
        return torch.stack(cols, dim=1)

"""OWLv2 / OWL-ViT open-vocabulary detection (transformers), all queries in one forward pass.

Config names ``owlv2`` and ``owlvit`` both build :class:`OwlDetector`; which model it is comes from
the loaded config, so ``model`` may name either family.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from hydra_vr.api.backends.hf_common import HubDetector, clean_queries
from hydra_vr.api.types import Detection


class OwlDetector(HubDetector):
    """Detector over ``transformers`` OWLv2 / OWL-ViT.

    Options: ``model`` (hub id or local dir, default google/owlv2-base-patch16-ensemble),
    ``threshold`` (min sigmoid score, 0.1), ``nms_iou`` (per-query NMS IoU, 0.3; >= 1 disables),
    ``max_detections`` (100), plus HubBackend's ``device``/``dtype``/``revision``/``local_files_only``.
    Each box is assigned the query it scores highest on; ``label`` and ``query`` are that text.
    """

    default_model = "google/owlv2-base-patch16-ensemble"
    source = "owlv2"
    default_threshold = 0.1
    default_nms_iou = 0.3

    def _after_load(self) -> None:
        # OWLv2 pads to a square before resizing, so its normalised boxes are fractions of the padded side.
        self._pads_to_square = self._model.config.model_type == "owlv2"
        self.source = "owlv2" if self._pads_to_square else "owlvit"

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        names = clean_queries(queries)
        if not names:
            return []
        image = image.convert("RGB")
        outputs = self.run(text=[names], images=image, truncation=True)
        w, h = image.size
        side = max(w, h)
        target = [(side, side)] if self._pads_to_square else [(h, w)]
        res = self.processor.image_processor.post_process_object_detection(
            outputs=outputs, threshold=self.threshold, target_sizes=target
        )[0]
        return self.to_detections(res["boxes"], res["scores"], res["labels"], names, image)

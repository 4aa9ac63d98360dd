"""The ImagePatch API, its helpers and the vision toolbox behind it."""

from hydra_vr.api.helpers import (
    best_image_match,
    bool_to_yesno,
    coerce_to_numeric,
    distance,
    get_middle_patch,
    get_patch_closest_to_anchor_object,
    get_patch_farthest_from_anchor_object,
    sort_patches_front_to_back,
    sort_patches_left_to_right,
    sort_patches_top_to_bottom,
)
from hydra_vr.api.image_patch import ImageLoadError, ImagePatch, bind_toolbox, load_image
from hydra_vr.api.toolbox import ToolUnavailableError, VisionToolbox
from hydra_vr.api.types import Answer, Box, ColorShare, Detection, LabelScore, TextRegion

__all__ = [
    "Answer", "Box", "ColorShare", "Detection", "ImageLoadError", "ImagePatch", "LabelScore", "TextRegion",
    "ToolUnavailableError", "VisionToolbox", "best_image_match", "bind_toolbox", "bool_to_yesno",
    "coerce_to_numeric", "distance", "get_middle_patch", "get_patch_closest_to_anchor_object",
    "get_patch_farthest_from_anchor_object", "load_image", "sort_patches_front_to_back",
    "sort_patches_left_to_right", "sort_patches_top_to_bottom",
]

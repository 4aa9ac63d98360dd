"""Benchmark loaders (GQA, OK-VQA, A-OKVQA, RefCOCO/+/g, easy-VQA, user files) -> :class:`Sample`."""

from hydra_vr.datasets.base import DatasetError, MissingFileError, Sample, check_images
from hydra_vr.datasets.loading import default_dataset_registry, load_dataset

__all__ = [
    "DatasetError",
    "MissingFileError",
    "Sample",
    "check_images",
    "default_dataset_registry",
    "load_dataset",
]

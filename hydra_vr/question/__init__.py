"""A question parsed once into a typed frame (:class:`QuestionFrame`) that every consumer reads."""

from hydra_vr.question.frame import QuestionFrame, parse

__all__ = ["QuestionFrame", "parse"]

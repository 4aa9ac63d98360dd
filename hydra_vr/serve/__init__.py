"""``hydra-vr serve``: an HTTP API, a job queue in front of the loaded models, and a web page.

Build the app with :func:`hydra_vr.serve.app.create_app` from a :class:`ServeSettings`; nothing is
loaded or started at import. Needs the optional extra ``serve`` (FastAPI, uvicorn,
prometheus-client, python-multipart).
"""

from hydra_vr.serve.settings import ServeSettings

__all__ = ["ServeSettings"]

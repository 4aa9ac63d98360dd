"""hydra-vr: compositional visual reasoning (HYDRA / ViperGPT style).

Importing the package loads no model and touches no file; everything heavy is lazy.
"""

__version__ = "0.1.0"

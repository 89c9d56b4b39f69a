"""Front-end tests share case tables and helpers (tests run with --import-mode=importlib, so
the directory is put on sys.path here)."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

"""The reference tests share `reference_support` (tests run with --import-mode=importlib, so
the directory is put on sys.path here rather than relying on rootdir-relative imports)."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

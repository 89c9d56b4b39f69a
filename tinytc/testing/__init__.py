"""Helpers for testing compilers and kernels: random arguments (and, later, strategies)."""

from .inputs import random_arguments

__all__ = ["random_arguments"]

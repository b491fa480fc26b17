"""Compile a checked program into Python once, and run packets through it (v1model)."""

from p4switch.compiler.module import CompiledCode, generate
from p4switch.compiler.v1model import Pipeline

__all__ = ["CompiledCode", "Pipeline", "generate"]

"""Reading inputs: paths, directories, gzip, stdin -> byte streams, never a whole file."""

from rlfix.read.inputs import Input, Problem, expand

__all__ = ["Input", "Problem", "expand"]

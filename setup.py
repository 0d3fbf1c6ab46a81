"""Package discovery that pyproject.toml alone cannot express.

Every package under rlfix/ is found, not listed (a hand-kept list once left out rlfix.fleet and
broke every non-editable install), and the top-level knowledge/ folder ships as rlfix.knowledge.
Everything else (metadata, dependencies, package data) lives in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["rlfix", "rlfix.*"], exclude=["*.__pycache__"]), "rlfix.knowledge"],
    package_dir={"rlfix.knowledge": "knowledge"},
)

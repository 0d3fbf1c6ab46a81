"""The knowledge base: YAML files with line marks -> typed, validated signatures."""

from rlfix.kb.load import KnowledgeBase, builtin_dir, load_knowledge

__all__ = ["KnowledgeBase", "builtin_dir", "load_knowledge"]

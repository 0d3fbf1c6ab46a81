"""Knowledge-base tooling apart from the pipeline: lint, describe, draft, catalogue, export, evaluate."""

"""docs/example.ipynb runs in a real Jupyter kernel and shows the HTML report."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "example.ipynb"


@pytest.mark.slow
def test_example_notebook_executes_and_shows_the_report(tmp_path: Path) -> None:
    # Test-extra dependencies: imported, not skipped, so CI fails loudly without them.
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    html = [
        out["data"]["text/html"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if "text/html" in out.get("data", {})
    ]
    assert len(html) == 1, "the report cell should display exactly one HTML output"
    page = html[0]
    assert '<div class="rlfix compact">' in page
    assert '<article class="diag top" data-id="cuda-illegal-memory-access"' in page
    assert 'class="mark first"' in page and "first failure: rank 2" in page

    printed = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )
    assert "cuda-illegal-memory-access | rank 2 | line 5" in printed
    assert "## rlfix diagnosis" in printed
    errors = [out for cell in nb.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors

"""The documentation site builds with `mkdocs build --strict`, its generated reference pages included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly_with_the_generated_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [str(Path(sys.prefix) / "bin" / "mkdocs"), "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(Path(sys.prefix) / "bin"), "HOME": str(tmp_path), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "POST /v1/chat/completions" in api and "schema-" in api
    assert '"openapi"' in (site / "reference" / "openapi.json").read_text(encoding="utf-8")
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: switchboard limits set" in cli and "cli-help" not in cli
    assert "Keep a Changelog" in (site / "changelog" / "index.html").read_text(encoding="utf-8")

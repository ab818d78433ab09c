"""Templating lives in the core (proctor.templating); this name stays for the loader."""

from proctor.templating import PLACEHOLDER, references, render, render_data

__all__ = ["PLACEHOLDER", "references", "render", "render_data"]

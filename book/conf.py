"""Sphinx configuration of the book (``make book``; scripts/build_book.py stages the sources).

The notebooks are rendered with their stored outputs (no execution), math is typeset by a
MathJax copied into ``_static/mathjax`` at build time, and nothing on a page is loaded from
another host (tests/book checks that in headless Chromium).
"""

project = "KV-cache math"
author = "kvlib contributors"
copyright = "the kvlib contributors, MIT licence"
html_title = "KV-cache math: the notebooks"

# githubpages: writes .nojekyll, so GitHub Pages serves the _static and _images folders.
extensions = ["myst_nb", "sphinx_copybutton", "sphinx.ext.githubpages"]

# Stored outputs only: the book never runs a notebook (`make test` checks the outputs).
nb_execution_mode = "off"
# Widget views need a running kernel; their JavaScript would come from a CDN. None is loaded:
# the build script drops widget views and adds a "run it live" note after each widget cell.
nb_ipywidgets_js = {}
# Markdown outputs (kvlib's tables and formula lines) go through MyST, so `$...$` is math.
nb_render_markdown_format = "myst"
nb_merge_streams = True

myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# MathJax from the npm package unpacked into _static (a relative path is taken from _static).
mathjax_path = "mathjax/tex-mml-chtml.js"

html_theme = "sphinx_book_theme"
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
}
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_last_updated_fmt = None
html_permalinks_icon = "#"

exclude_patterns = ["README.md", "_build", "**/.ipynb_checkpoints"]

# MathJax 3 (the version in _static). Undefined macros are errors, not red text, so a typo in
# a formula shows up as a MathJax error (tests/book fails on any).
mathjax3_config = {"tex": {"packages": {"[-]": ["noundefined"]}}}

"""What a reader sees: plotting style (:mod:`.style`), equations (:mod:`.show`), figures
(:mod:`.figures`), widgets (:mod:`.widgets`) and Markdown tables (:mod:`.tables`).

May import every layer below it (core, reference, models, serving), never :mod:`kvlib.cli`.
"""

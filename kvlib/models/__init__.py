"""Real models: config.json readers (one module per family, :mod:`.readers`), layer groups
(:mod:`.spec`), the bundled configs (:mod:`.catalog`) and one estimate (:mod:`.estimate`).

May import :mod:`kvlib.core` and :mod:`kvlib.reference`.
"""

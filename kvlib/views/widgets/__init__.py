"""One explorer per notebook topic (GQA, MLA, real models, capacity) on a shared kit (:mod:`.kit`).

Part of :mod:`kvlib.views`.
"""

"""The note classifier: which readers a note is for, and how closely to read it.

Holds the rules, the learned models beside them, their model files (`data/`) and the
reader roles (`taxonomy`). It imports only `bot.domain` from the rest of the product.
"""

from bot.classify.pipeline import (
    CLASSIFIER_VERSION,
    MODEL_FILES,
    Classifier,
    build_classifier,
    classifier_fingerprint,
    classify,
)

__all__ = [
    "CLASSIFIER_VERSION",
    "MODEL_FILES",
    "Classifier",
    "build_classifier",
    "classifier_fingerprint",
    "classify",
]

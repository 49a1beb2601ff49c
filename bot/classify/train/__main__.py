"""`python -m bot.classify.train [--check | diff | record]`: retrain (or check) every model
file, or compare and record what the classifier decides."""

import os

from bot.classify.train import main
from bot.classify.train.model_files import NUMERICS

# Before numpy is first loaded (scikit-learn is imported only when a model is fitted): the
# BLAS then adds the same numbers in the same order on every machine.
os.environ.update(NUMERICS)

raise SystemExit(main())

"""`python -m bot.classify.train [--check]`: retrain (or check) every model file."""

from bot.classify.train import main

raise SystemExit(main())

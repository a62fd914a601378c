#!/usr/bin/env python3
"""Generate the scoring corpus: `scripts/make_corpus.py OUT_DIR [--small] [--jobs 2]`.

The same as `python -m stallscope.analyzers.corpus`; see docs/scoring.md.
"""

import sys

from stallscope.analyzers.corpus import main

if __name__ == "__main__":
    sys.exit(main())

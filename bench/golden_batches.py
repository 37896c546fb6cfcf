"""Records or checks the loader's golden batch checksums (see python/tests/golden_batches.py).

    PYTHONPATH=python python bench/golden_batches.py           # compare with the golden file
    PYTHONPATH=python python bench/golden_batches.py --write   # rewrite it (intended changes only)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python" / "tests"))

import golden_batches  # noqa: E402

if __name__ == "__main__":
    sys.exit(golden_batches.main(sys.argv[1:]))

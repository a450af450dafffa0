"""The package around the extension's op (issue 40's `pip install -e .` case)."""
import torch  # noqa: F401  (loads libtorch before the extension)

from ima_ext._C import scatter_rows  # noqa: F401

"""What makes a manifest a variant rather than a model: shared by the inventory's entries and the result rows, so a
row can carry its kinds without loading the inventory's schemas."""

from typing import Literal

VariantKind = Literal["tp", "cp", "quantized", "l0", "regression", "random", "partial", "local-only"]

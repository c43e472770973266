"""The control models shipped with the package, by name, and where their folders are. Nothing here loads torch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"
# Beside the weights in each folder: the model card (Hugging Face's name for it) and the training record.
CARD_FILE = "README.md"
RECORD_FILE = "training.json"


@dataclass(frozen=True)
class ControlModel:
    """One shipped model: its folder's name (which `transformers serve` and a run's row are named by) and how it
    was taught."""

    folder: str
    order_blind: bool
    seed_offset: int  # added to base.json's seed, so that the twin's weights are not the control's

    @property
    def path(self) -> Path:
        return DATA_DIR / self.folder


CONTROL = ControlModel("qwen2.5-vl-videoqa-control", order_blind=False, seed_offset=0)
# The twins, by the name `control-model --twin` takes.
TWINS: dict[str, ControlModel] = {
    "order-blind": ControlModel("qwen2.5-vl-videoqa-control-order-blind", order_blind=True, seed_offset=1),
}

"""`trtmc-videoqa control-model [--twin order-blind]`: the folder of a shipped control model, for
`transformers serve "$(trtmc-videoqa control-model)"`."""

from __future__ import annotations

import argparse

from ..common.errors import EXIT_OK, UserError
from ..controls.shipped import CONTROL, TWINS


def cmd_control_model(args: argparse.Namespace) -> int:

    model = TWINS[args.twin] if args.twin else CONTROL
    if not (model.path / "config.json").is_file():
        raise UserError(
            f"the control model {model.folder} is not in this installation ({model.path.name} has no config.json): "
            "reinstall trtmc-videoqa from a full checkout or wheel"
        )
    print(model.path)
    return EXIT_OK


def add_arguments(control_model: argparse.ArgumentParser) -> None:
    """The `control-model` command's options; its handler."""

    control_model.description = (
        "Print the folder of the shipped control model (a tiny Qwen2.5-VL that memorised the shipped workloads), "
        'to serve it: transformers serve "$(trtmc-videoqa control-model)". A control checks a serving setup; it '
        "is not a capable model. docs/control-models.md says how to use it."
    )
    control_model.add_argument(
        "--twin",
        choices=sorted(TWINS),
        help="the twin instead: order-blind sees the same frames but was never taught their order",
    )
    control_model.set_defaults(handler=cmd_control_model)

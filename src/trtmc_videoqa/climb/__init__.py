"""What the stages, the rows and the ladders share: the stage protocol (`Climb`, `Stop`, `Step`, `climb_ladder`), a
TRTMC row's job, the workload's prompts, the load levels and the arithmetic over measured requests. No stage lives
here: each stage is a module of `stages/`."""

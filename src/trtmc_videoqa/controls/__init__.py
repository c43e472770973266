"""Positive controls: tiny Qwen2.5-VL checkpoints trained to answer the shipped workloads, served by a real server
to show the qualification saying yes (the control) and the reversed clips catching a model blind to frame order
(the twin). They memorise these clips and are not capable models."""

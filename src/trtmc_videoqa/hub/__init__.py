"""The local Hugging Face hub cache: looked up, never downloaded from."""

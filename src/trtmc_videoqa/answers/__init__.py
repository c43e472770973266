"""What a server answers, read as its shapes: a chat completion, its stream, a native Task answer."""

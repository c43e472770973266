"""Render a question and its options into the exact prompt text sent to the model."""

from __future__ import annotations

import hashlib

from .model import PromptTemplate, Question, RenderedPrompt


def render_prompt(template: PromptTemplate, question: Question) -> str:
    """The question, one "A. text" line per option, then the answer instruction (as the template says)."""
    # str.replace rather than str.format: question text may hold braces.
    return template.template.replace("{question}", question.prompt).replace(
        "{options}", "\n".join(question.option_lines())
    )


def rendered_prompt(template: PromptTemplate, question: Question) -> RenderedPrompt:
    text = render_prompt(template, question)
    return RenderedPrompt(question_id=question.id, text=text, sha256=hashlib.sha256(text.encode()).hexdigest())

"""The look shared by the modal questions (approval, confirm): a framed box with a row of buttons."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

AnswerT = TypeVar("AnswerT")


class QuestionScreen(ModalScreen[AnswerT]):
    """Compose the box with the class `question` and its buttons' row with `question-buttons`."""

    DEFAULT_CSS = """
    QuestionScreen {
        align: center middle;

        .question {
            width: 72;
            max-width: 96%;
            height: auto;
            max-height: 90%;
            padding: 1 2;
            border: thick $warning;
            background: $surface;
        }

        .question-buttons {
            height: auto;
            margin-top: 1;
        }

        .question-buttons Button {
            margin-right: 1;
        }
    }
    """

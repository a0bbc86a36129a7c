"""The sandbox in the TUI: the dialog that asks to leave it, and the status line that tells."""

from __future__ import annotations

from textual.app import App
from textual.widgets import Button

from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.tui.screens.approval import ApprovalChoice, ApprovalScreen
from cmdop_tui.tui.widgets.status_line import StatusLine


class DialogApp(App[None]):
    def __init__(self, screen: ApprovalScreen) -> None:
        super().__init__()
        self.dialog = screen
        self.choices: list[ApprovalChoice | None] = []

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.choices.append)


async def test_leaving_the_sandbox_is_asked_once_with_the_reason():
    refusal = SandboxRefusal("write", ("/etc/nginx/nginx.conf",))
    screen = ApprovalScreen("execute_command", "local", {"command": "nginx -s reload"}, escalation=refusal)
    app = DialogApp(screen)
    async with app.run_test(size=(80, 24)) as pilot:
        text = " ".join(str(widget.render()) for widget in screen.query("Label, Static"))
        assert "outside the sandbox" in text and "refused to write: /etc/nginx/nginx.conf" in text
        assert {button.id for button in screen.query(Button)} == {"once", "deny"}
        await pilot.press("a")  # "for this session" does not exist for leaving the sandbox
        await pilot.press("p")
        assert app.choices == []
        await pilot.press("y")
        await pilot.pause()
        assert app.choices == [ApprovalChoice.ONCE]


async def test_an_ordinary_approval_keeps_its_choices():
    screen = ApprovalScreen("execute_command", "local", {"command": "make"})
    app = DialogApp(screen)
    async with app.run_test(size=(80, 24)) as pilot:
        assert {button.id for button in screen.query(Button)} == {"once", "session", "always", "deny"}
        await pilot.press("a")
        await pilot.pause()
        assert app.choices == [ApprovalChoice.SESSION]


class StatusApp(App[None]):
    def compose(self):
        yield StatusLine()


async def test_the_status_line_says_when_there_is_no_sandbox():
    app = StatusApp()
    async with app.run_test(size=(80, 3)) as pilot:
        status = app.query_one(StatusLine)
        status.update_facts(model="m", sandbox="no sandbox")
        await pilot.pause()
        assert "no sandbox" in str(status.render())
        status.update_facts(sandbox="sandbox workspace")  # the default is said too, beside the mode
        await pilot.pause()
        assert "default · sandbox workspace" in str(status.render())

"""What no checkpoint of a working tree undoes is told from a command's words (the turn's notes)."""

from __future__ import annotations

import pytest

from cmdop_tui.session.checkpoints import irreversible_effects


@pytest.mark.parametrize(
    ("command", "effect"),
    [
        ("sudo apt-get install -y nginx", "packages installed or removed"),
        ("dnf remove httpd", "packages installed or removed"),
        ("pip install --user requests", "packages installed for the user"),
        ("npm install -g typescript", "packages installed for the user"),
        ("systemctl restart nginx", "services started, stopped or restarted"),
        ("service postgresql reload", "services started, stopped or restarted"),
        ("kubectl apply -f deploy.yaml", "containers or clusters changed"),
        ("crontab -l | { cat; echo '* * * * * x'; } | crontab -", "system settings changed"),
    ],
)
def test_what_a_command_changes_outside_any_tree_is_named(command, effect):
    assert effect in irreversible_effects(command)


@pytest.mark.parametrize(
    "command", ["sed -i s/a/b/ app.conf", "pip install -r requirements.txt", "systemctl status nginx", "ls -la"]
)
def test_a_change_inside_the_tree_or_a_look_is_not(command):
    assert irreversible_effects(command) == []

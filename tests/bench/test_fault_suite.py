"""The fault suite, as a table: every fault issue 21 lists, in its words, and the tests that check it.

`pytest -m fault` runs the suite. This test holds the table true: each named test exists and
carries the `fault` marker, no fault is left without a test, and no test carries the marker
without a row naming it. A node id with a parameter (`[...]`) names that case alone; one without
names the test with all its cases. A test marked `xfail(strict=True)` is a fault still open: its
reason says where.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HISTORY = "tests/unit/test_history_the_api_accepts.py"
STOP_REASONS = "tests/unit/test_stop_reasons.py"
ERROR_LINES = "tests/unit/test_error_lines.py"
PASTE = "tests/unit/test_paste.py"
ASK_BOUNDED = "tests/unit/test_ask_answer_bounded.py"
SSH_WORDS = "tests/unit/test_ssh_failure_words.py"
EXIT_SIGNALS = "tests/unit/test_exit_signals.py"
RECREATE = "tests/unit/test_transcript_recreate_attack.py"
RUNNER = "tests/unit/test_runner.py"
FILE_TOOLS = "tests/unit/test_tools_files.py"
TRANSCRIPT = "tests/functional/test_transcript_faults.py"
TERMINAL = "tests/functional/test_terminal_faults.py"
HEADLESS = "tests/functional/test_headless.py"
TUI = "tests/functional/test_tui.py"
SESSION_LIFE = "tests/functional/test_tui_session_life.py"
MACHINES = "tests/machines/test_machines.py"
FANOUT = "tests/machines/test_fanout.py"
CONTAINMENT = "tests/machines/test_containment.py"
WARM_AGENT = "tests/machines/test_warm_agent.py"


@dataclass(frozen=True)
class Fault:
    section: str  # the bullet
    words: str  # the fault, as the issue says it
    tests: tuple[str, ...]  # node ids


def fault(section: str, words: str, *tests: str) -> Fault:
    return Fault(section, words, tests)


WEDGED = "Sessions wedged for good"
HANGS = "Hangs"
LOST = "Lost without a word"
CONTAINMENT_BY_SIZE = "Containment switched off by size"
PASTED = "A paste that sends itself"
BROKEN_TERMINAL = "The terminal left broken"
PAUSE = "A pause is taken for death"
UNBOUNDED = "Unbounded and misleading results"
ONE_LINE = "One-line errors that are not"

SHAPES = f"{HISTORY}::test_the_next_request_after_each_reply_shape_is_accepted"
FROZEN = f"{MACHINES}::test_a_frozen_host_does_not_hold_a_timeout_or_a_stop"
DRIBBLE = f"{RUNNER}::test_an_endpoint_that_dribbles_bytes_without_progress_ends_within_its_deadline"
SIGNAL_EXIT = f"{TERMINAL}::test_a_signal_restores_the_terminal_ends_children_and_says_why"

FAULTS: tuple[Fault, ...] = (
    fault(
        WEDGED,
        'a reply whose only text is whitespace ("\\n\\n" after tool results) is stored as it is',
        f"{SHAPES}[whitespace after tool results]",
        f"{SHAPES}[whitespace before a tool call]",
        f"{SHAPES}[only spaces]",
    ),
    fault(
        WEDGED,
        "every later request fails with 400, in the TUI and after --continue (a stored history)",
        f"{HISTORY}::test_a_stored_history_the_api_refuses_is_repaired",
    ),
    fault(WEDGED, "two tool calls sharing an id in one reply", f"{SHAPES}[two calls sharing an id]"),
    fault(
        WEDGED, "two tool calls sharing an id across turns", f"{HISTORY}::test_an_id_repeated_across_turns_is_made_new"
    ),
    fault(
        WEDGED,
        "ids the API's pattern refuses",
        f"{SHAPES}[an id the pattern refuses]",
        f"{SHAPES}[an id with spaces]",
    ),
    fault(HANGS, "a host that freezes behind a live ControlMaster: timeout_ms is never applied", f"{FROZEN}[timeout]"),
    fault(
        HANGS,
        "a frozen host: no result after ten minutes (no ServerAliveInterval)",
        f"{MACHINES}::test_a_host_frozen_behind_a_live_connection_ends_the_command",
    ),
    fault(HANGS, "a frozen host: the first Stop does nothing", f"{FROZEN}[stop]"),
    fault(
        HANGS,
        "a run_on_machines throws away the other hosts' finished results",
        f"{MACHINES}::test_a_fan_out_with_a_frozen_host_keeps_the_hosts_that_finished",
        f"{FANOUT}::test_a_stop_keeps_the_hosts_that_finished",
    ),
    fault(
        HANGS,
        "an endpoint that never sends headers: 742 s before an error",
        f"{RUNNER}::test_an_endpoint_that_never_answers_ends_within_its_silence_deadline",
    ),
    fault(
        HANGS,
        "an endpoint that never sends headers: silent in text mode",
        f"{RUNNER}::test_a_silent_endpoint_is_said_long_before_its_deadline",
        f"{HEADLESS}::test_a_silent_endpoint_is_said_on_stderr_in_text_mode",
    ),
    fault(HANGS, "one that dribbles a byte a second: no error after 600 s", f"{DRIBBLE}[head]", f"{DRIBBLE}[body]"),
    fault(
        LOST,
        "a full disk ends the transcript on a half-written record: turns and the final answer are lost",
        f"{TRANSCRIPT}::test_a_full_disk_holds_records_in_memory_and_writes_them_in_order_when_space_returns",
        f"{TRANSCRIPT}::test_close_counts_what_the_full_disk_kept_back",
        f"{TRANSCRIPT}::test_memory_held_for_a_full_disk_is_bounded_and_the_gap_is_marked",
        f"{TRANSCRIPT}::test_an_io_error_holds_records_like_a_full_disk",
    ),
    fault(
        LOST,
        "a full disk: headless exits 0",
        f"{TRANSCRIPT}::test_a_disk_full_to_the_end_exits_3_and_says_what_is_missing",
    ),
    fault(
        LOST,
        "a full disk: the TUI says nothing",
        f"{TRANSCRIPT}::test_the_tui_says_a_full_disk_at_once_and_when_it_is_over",
    ),
    fault(
        LOST,
        "a full disk: nothing is written once space is back",
        f"{TRANSCRIPT}::test_full_disk_mid_session_said_at_once_then_caught_up",
    ),
    fault(
        LOST,
        '--continue then calls a finished command "interrupted"',
        f"{TRANSCRIPT}::test_a_disk_full_to_the_end_is_not_taken_for_an_interrupted_command",
    ),
    fault(
        LOST,
        "a transcript deleted while the app runs is lost silently",
        f"{TRANSCRIPT}::test_a_removed_transcript_is_written_again_whole",
        f"{TRANSCRIPT}::test_a_removed_sessions_directory_is_made_again",
        f"{TRANSCRIPT}::test_the_tui_says_a_removed_transcript_was_written_again",
        f"{RECREATE}::test_a_symlink_planted_at_the_spare_name_is_not_followed",
    ),
    fault(
        LOST,
        "a transcript replaced while the app runs is lost silently",
        f"{TRANSCRIPT}::test_a_replaced_transcript_is_written_again_and_the_other_file_kept",
    ),
    fault(
        CONTAINMENT_BY_SIZE,
        "an environment over 1 MB: a daemon then outlives the app, even after kill -9 with the sandbox on",
        f"{CONTAINMENT}::test_sigkill_of_the_app_kills_the_whole_tree[large environment]",
    ),
    fault(
        CONTAINMENT_BY_SIZE,
        'every command run "without containment" (where the supervisor cannot start)',
        f"{CONTAINMENT}::test_where_the_supervisor_cannot_start_commands_are_refused_not_run_uncontained",
    ),
    fault(
        PASTED,
        "pasting text with an escape sequence and CR-LF (a coloured log line) sends a prompt the user never confirmed",
        f"{TERMINAL}::test_a_coloured_log_line_pasted_is_text_and_waits_for_enter",
        f"{TUI}::test_a_paste_from_any_driver_is_inert_text_that_waits_for_enter",
    ),
    fault(
        PASTED,
        "a paste scrambles the rest in the input",
        f"{PASTE}::test_a_paste_is_one_inert_piece_between_keys",
        f"{PASTE}::test_controls_in_a_paste_are_shown_not_acted_on",
        f"{PASTE}::test_markers_split_across_reads_are_held_until_whole",
        f"{PASTE}::test_a_lone_esc_goes_on_at_once_and_a_held_prefix_goes_on_when_idle",
        f"{PASTE}::test_a_paste_whose_end_never_comes_ends_when_input_stops",
    ),
    fault(
        BROKEN_TERMINAL,
        "SIGTERM kills the TUI without restoring the terminal",
        f"{SIGNAL_EXIT}[TERM]",
        f"{TERMINAL}::test_a_signal_stops_the_local_model_too",
        f"{EXIT_SIGNALS}::test_an_app_that_never_exits_is_left_with_the_terminal_restored",
    ),
    fault(
        BROKEN_TERMINAL,
        "SIGHUP (an SSH link dropping) kills the TUI without restoring the terminal",
        f"{SIGNAL_EXIT}[HUP]",
        f"{TERMINAL}::test_a_terminal_that_goes_away_ends_the_app_with_its_children",
    ),
    fault(
        PAUSE,
        "after Ctrl-Z an intact buffered stream is thrown away, asked for again and billed twice",
        f"{RUNNER}::test_a_stopped_process_reads_its_buffered_stream_and_does_not_ask_again",
    ),
    fault(PAUSE, "any network pause over 2 s", f"{RUNNER}::test_a_network_pause_over_2_s_is_not_a_stall"),
    fault(
        UNBOUNDED,
        "a remote agent's 20 MB answer enters the history whole",
        f"{ASK_BOUNDED}::test_a_huge_answer_is_cut_in_the_middle_and_kept_whole",
        f"{ASK_BOUNDED}::test_without_a_transcript_the_cut_says_nothing_keeps_it",
        f"{ASK_BOUNDED}::test_a_short_answer_is_whole_and_not_kept",
        f"{ASK_BOUNDED}::test_many_hosts_share_one_budget_and_all_are_kept_whole",
        f"{ASK_BOUNDED}::test_few_short_answers_are_plain_json",
        f"{MACHINES}::test_a_huge_answer_is_capped_in_the_history_and_recalled_whole_from_the_transcript",
    ),
    fault(
        UNBOUNDED,
        "glob over a directory of 200k entries silently skips matches",
        f"{FILE_TOOLS}::test_glob_is_exact_over_a_huge_folder",
    ),
    fault(
        UNBOUNDED,
        'a connection dropped mid-command says "cannot reach h1" while the command still runs there',
        f"{MACHINES}::test_a_link_lost_mid_command_says_it_may_still_run",
        f"{SSH_WORDS}::test_a_lost_link_says_the_command_may_still_run",
        f"{SSH_WORDS}::test_a_machine_never_reached_says_so",
    ),
    fault(
        ONE_LINE,
        "an HTML 502 page (7 lines on stderr after 6 tries)",
        f"{ERROR_LINES}::test_an_html_error_page_is_one_line_with_its_status_and_title",
        f"{ERROR_LINES}::test_a_long_error_message_is_cut_to_one_line",
    ),
    fault(
        ONE_LINE,
        'a 200 with HTML on a stream request ("stream stalled")',
        f"{ERROR_LINES}::test_a_web_page_in_answer_to_a_stream_is_said_at_once",
    ),
    fault(
        ONE_LINE,
        'a 200 with JSON on a stream request ("stream stalled")',
        f"{ERROR_LINES}::test_a_json_body_in_answer_to_a_stream_is_said_at_once",
    ),
    fault(
        ONE_LINE,
        "stop_reason max_tokens exiting 0 with a cut answer and no notice",
        f"{STOP_REASONS}::test_an_answer_cut_at_max_tokens_is_a_cut_not_a_final",
        f"{HEADLESS}::test_a_cut_answer_is_shown_and_said_and_exits_1",
    ),
    fault(ONE_LINE, "stop_reason refusal exiting 0 with no notice", f"{STOP_REASONS}::test_a_refusal_is_said"),
    fault(
        ONE_LINE,
        "stop_reason empty exiting 0 with a cut answer and no notice",
        f"{STOP_REASONS}::test_an_answer_without_a_stop_reason_is_not_taken_for_a_whole_one",
    ),
    fault(ONE_LINE, "pause_turn taken as final", f"{STOP_REASONS}::test_a_paused_turn_is_sent_back_and_goes_on"),
    fault(
        ONE_LINE,
        'a 413 on turn 1 "even after compaction"',
        f"{ERROR_LINES}::test_a_413_on_the_first_turn_is_not_called_a_failed_compaction",
    ),
    fault(
        ONE_LINE,
        "UnicodeDecodeError/JSONDecodeError texts",
        f"{ERROR_LINES}::test_undecodable_replies_are_named_for_what_they_are",
    ),
    fault(
        ONE_LINE,
        "a base URL without a scheme retried for 20 s",
        f"{HEADLESS}::test_a_base_url_that_is_not_http_is_said_at_once",
        f"{SESSION_LIFE}::test_a_base_url_that_is_not_http_is_said_at_once",
    ),
    fault(
        ONE_LINE,
        "tracebacks for a read-only data dir",
        f"{TRANSCRIPT}::test_a_read_only_data_directory_runs_without_a_transcript",
    ),
    fault(
        ONE_LINE,
        "XDG_DATA_HOME that is a file",
        f"{TRANSCRIPT}::test_xdg_data_home_that_is_a_file_runs_without_a_transcript",
        f"{TRANSCRIPT}::test_nothing_to_continue_when_the_data_home_is_a_file",
        f"{TRANSCRIPT}::test_the_tui_runs_without_a_transcript_and_says_so_once",
    ),
    fault(ONE_LINE, "stdout on /dev/full", f"{HEADLESS}::test_stdout_on_a_full_device_is_one_line_on_stderr"),
    fault(
        ONE_LINE,
        "stdout closed",
        f"{HEADLESS}::test_stdout_closed_is_one_line_on_stderr",
        f"{HEADLESS}::test_a_reader_that_went_away_ends_quietly",
    ),
    fault(ONE_LINE, "-p - with stdin closed", f"{HEADLESS}::test_a_closed_stdin_for_dash_p_is_a_usage_error"),
    fault(
        ONE_LINE,
        'a broken remote agent reported as "ended without an answer"',
        f"{ASK_BOUNDED}::test_an_agent_that_ended_without_an_answer_says_what_it_printed",
        f"{MACHINES}::test_a_broken_agent_there_says_what_it_printed",
    ),
    fault(
        ONE_LINE,
        "a stopped warm agent costs every run 10 s silently",
        f"{WARM_AGENT}::test_a_stopped_agent_is_said_and_the_run_goes_cold_at_once",
    ),
)

# Collects the whole suite in a child pytest and writes each test's node id and marker names.
PROBE = """
import json, os

def pytest_collection_finish(session):
    markers = {item.nodeid: sorted({m.name for m in item.iter_markers()}) for item in session.items}
    with open(os.environ["FAULT_SUITE_MARKERS"], "w") as out:
        json.dump(markers, out)
"""


def function_of(node_id: str) -> str:
    return node_id.split("[", 1)[0]


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Every test of the suite, as pytest collects it, with its markers."""
    where = tmp_path_factory.mktemp("probe")
    (where / "fault_suite_probe.py").write_text(PROBE)
    out = where / "markers.json"
    env = {**os.environ, "FAULT_SUITE_MARKERS": str(out)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(where), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "fault_suite_probe", "tests"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


def test_every_fault_has_a_test_and_no_row_repeats() -> None:
    assert all(f.tests for f in FAULTS), [f.words for f in FAULTS if not f.tests]
    words = [(f.section, f.words) for f in FAULTS]
    assert len(words) == len(set(words))


@pytest.mark.timeout(600)
def test_every_named_test_exists_and_carries_the_fault_marker(collected: dict[str, list[str]]) -> None:
    missing, unmarked = [], []
    for node_id in (t for f in FAULTS for t in f.tests):
        # A node id without a parameter names every case of its test.
        found = [n for n in collected if n == node_id or ("[" not in node_id and function_of(n) == node_id)]
        if not found:
            missing.append(node_id)
        unmarked += [n for n in found if "fault" not in collected[n]]
    assert not missing and not unmarked, f"not collected: {missing}; without the fault marker: {unmarked}"


@pytest.mark.timeout(600)
def test_every_test_marked_fault_is_in_the_table(collected: dict[str, list[str]]) -> None:
    named = {function_of(t) for f in FAULTS for t in f.tests}
    marked = {function_of(n) for n, markers in collected.items() if "fault" in markers}
    assert not marked - named, f"marked fault, named by no row: {sorted(marked - named)}"

"""Unit tests of pytest_agentctx.plugin.vcr_compat: pytest-recording's and pytest-vcr's
leftover options mapped to this package's, and the shim a pytest_recording_configure hook
gets."""

from __future__ import annotations

import pytest

from pytest_agentctx.plugin.vcr_compat import (
    RECORDING_OPTIONS,
    VCR_OPTIONS,
    VcrShim,
    rewrite_leftovers,
)

KNOWN = {**RECORDING_OPTIONS, **VCR_OPTIONS}


def rewrite(*args: str) -> tuple[list[str], list[str], tuple[str, ...]]:
    given = list(args)
    leftovers = rewrite_leftovers(given, KNOWN)
    return given, leftovers.lines, leftovers.allowed_hosts


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (("--record-mode=once",), "--agent-record=missing"),
        (("--record-mode", "new_episodes"), "--agent-record=new"),
        (("--record-mode=all",), "--agent-record=rewrite"),
        (("--record-mode=rewrite",), "--agent-record=rewrite"),
        (("--vcr-record=once",), "--agent-record=missing"),
        (("--disable-recording",), "--agent-live"),
        (("--disable-vcr",), "--agent-live"),
    ],
)
def test_a_leftover_option_becomes_the_one_it_maps_to(given, expected):
    args, lines, _ = rewrite("-q", *given, "tests")

    assert args == ["-q", "tests", expected]
    assert len(lines) == 1
    assert "is deprecated" in lines[0]


def test_record_mode_none_and_block_network_are_removed():
    args, lines, _ = rewrite("--record-mode=none", "--block-network", "tests")

    assert args == ["tests"]
    assert lines[0].endswith("replaying is the default; remove it.")
    assert lines[1].endswith("agent tests never reach the network while they replay; remove it.")


def test_a_record_mode_beside_agent_record_is_dropped():
    args, lines, _ = rewrite("--agent-record=new", "--record-mode=once")

    assert args == ["--agent-record=new"]
    assert "ignored, --agent-record is given" in lines[0]


def test_allowed_hosts_become_allowed_hosts():
    args, lines, hosts = rewrite(r"--allowed-hosts=localhost,.*\.example\.com")

    assert args == []
    assert hosts == ("localhost", "*.example.com")
    assert "agent_allowed_hosts = localhost *.example.com" in lines[0]


def test_an_allowed_hosts_regex_naming_no_host_is_refused():
    with pytest.raises(ValueError, match="agent_allowed_hosts"):
        rewrite("--allowed-hosts=a[0-9]+")


def test_a_bad_record_mode_names_the_choices():
    with pytest.raises(ValueError, match="expected one of none, once, new_episodes"):
        rewrite("--record-mode=sometimes")


def test_arguments_after_the_double_dash_are_kept():
    args, lines, _ = rewrite("--", "--block-network")

    assert args == ["--", "--block-network"]
    assert lines == []


def test_the_shim_keeps_registered_matchers():
    matchers: dict[str, object] = {}

    def mine(request: object, recorded: object) -> None:
        return None

    VcrShim(matchers).register_matcher("mine", mine)  # type: ignore[arg-type]

    assert matchers == {"mine": mine}


def test_the_shim_refuses_what_it_does_not_offer_saying_what_to_do():
    with pytest.raises(pytest.UsageError, match=r"vcr.register_serializer.*vcrpy's YAML itself"):
        VcrShim({}).register_serializer("x", object())

"""``pytest-agentctx report merge``: shard reports as one report, whatever their order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from pytest_agentctx.cli.merge import (
    expand_inputs,
    merge_reports,
    merged_text,
    read_reports,
    split_report,
)
from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.session_report import REPORT_VERSION, assemble_report, dumps_report


def entry(
    nodeid: str, *, tokens: int = 100, outcome: str = "passed", cassette=None
) -> dict[str, Any]:
    stats = {
        "runs": 1,
        "iterations": 2,
        "tool_calls": 1,
        "input_tokens": tokens,
        "output_tokens": 0,
        "total_tokens": tokens,
        "cost_usd": None,
        "duration_s": 2.0,
        "models": ["gpt-4o-mini"],
        "trajectory": ["search"],
    }
    return {
        "nodeid": nodeid,
        "outcome": outcome,
        "suite": "unit",
        "cassette": cassette,
        "budget": None,
        "repeat": None,
        "stats": stats,
        "runs": [{"name": "agent", "source": "runtime", "stats": stats}],
    }


def report(*tests: dict[str, Any]) -> dict[str, Any]:
    return assemble_report(sorted(tests, key=lambda test: test["nodeid"]))


def shards(*reports: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    return [(Path(f"shard-{n}.json"), data) for n, data in enumerate(reports)]


def shared(status: str, unused: list[int]) -> dict[str, Any]:
    return {
        "path": "cassettes/shared.json",
        "mode": "none",
        "status": status,
        "interactions": 3,
        "unused": unused,
    }


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=12, unique=True),
    st.integers(min_value=1, max_value=4),
    st.randoms(use_true_random=False),
)
def test_the_merged_bytes_do_not_depend_on_the_order_of_the_inputs(
    numbers: list[int], count: int, rng: Any
) -> None:
    tests = [entry(f"test_{n:02}.py::test_it", tokens=10 * n + 1) for n in numbers]
    parts = [report(*tests[i::count]) for i in range(count)]
    shuffled = list(parts)
    rng.shuffle(shuffled)

    assert dumps_report(merge_reports(shards(*parts))) == dumps_report(
        merge_reports(shards(*shuffled))
    )


def test_the_summary_is_that_of_one_session_running_every_test() -> None:
    tests = [entry("a.py::t", tokens=5), entry("b.py::t", tokens=7, outcome="failed")]

    merged = merge_reports(shards(report(tests[1]), report(tests[0])))

    assert merged["summary"] == {
        **report(*tests)["summary"],
        "gate": {"enabled": False, "passed": True, "failures": [], "records": []},
    }


def test_a_test_in_two_shards_with_different_results_is_refused() -> None:
    with pytest.raises(ReportError, match=r"test a.py::t is in shard-0.json and in shard-1.json"):
        merge_reports(shards(report(entry("a.py::t", tokens=5)), report(entry("a.py::t"))))


def test_a_test_in_two_shards_with_the_same_result_is_kept_once() -> None:
    merged = merge_reports(shards(report(entry("a.py::t")), report(entry("a.py::t"))))

    assert [test["nodeid"] for test in merged["tests"]] == ["a.py::t"]


def test_reports_of_different_versions_are_refused_naming_each_file(
    tmp_path: Path,
) -> None:
    old = report(entry("a.py::t")) | {"version": REPORT_VERSION + 1}
    (tmp_path / "a.json").write_text(json.dumps(report(entry("b.py::t"))))
    (tmp_path / "b.json").write_text(json.dumps(old))

    with pytest.raises(ReportError, match="different format versions") as error:
        read_reports(expand_inputs([str(tmp_path)]))

    assert f"version {REPORT_VERSION}: {tmp_path / 'a.json'}" in str(error.value)
    assert f"version {REPORT_VERSION + 1}: {tmp_path / 'b.json'}" in str(error.value)


def test_reports_of_a_version_this_package_cannot_read_are_refused(tmp_path: Path) -> None:
    later = report(entry("a.py::t")) | {"version": REPORT_VERSION + 1}
    (tmp_path / "a.json").write_text(json.dumps(later))

    with pytest.raises(
        ReportError, match=r"a.json has format version 3; .* reads versions 1 and 2"
    ):
        read_reports(expand_inputs([str(tmp_path)]))


def test_version_1_shards_merge_into_a_report_of_this_version(tmp_path: Path) -> None:
    earlier = report(entry("a.py::t")) | {"version": 1}

    merged = merge_reports([(tmp_path / "a.json", earlier)])

    assert (merged["version"], merged["summary"]["gate"]["records"]) == (REPORT_VERSION, [])


def test_a_file_that_is_not_a_report_is_refused(tmp_path: Path) -> None:
    (tmp_path / "junit.json").write_text('{"tests": []}')

    with pytest.raises(ReportError, match=r"junit.json is not a pytest-agentctx report"):
        read_reports(expand_inputs([str(tmp_path / "*.json")]))


def test_the_output_file_is_not_an_input(tmp_path: Path) -> None:
    for name in ("a.json", "merged.json"):
        (tmp_path / name).write_text("{}")

    assert expand_inputs([str(tmp_path)], output=tmp_path / "merged.json") == [tmp_path / "a.json"]


def test_an_output_named_as_an_input_file_is_refused_and_left_unchanged(
    tmp_path: Path,
) -> None:
    for name in ("shard-1.json", "shard-2.json"):
        (tmp_path / name).write_text("{}")
    first = str(tmp_path / "shard-1.json")

    with pytest.raises(ReportError, match=r"the output .*shard-1.json is also an input"):
        expand_inputs([first, str(tmp_path / "shard-2.json")], output=Path(first))

    assert (tmp_path / "shard-1.json").read_text() == "{}"


def test_a_shared_cassette_is_unused_only_where_no_shard_used_a_recording() -> None:
    first = report(entry("a.py::t", cassette=shared("unused", [1, 2])))
    second = report(entry("b.py::t", cassette=shared("unused", [0, 2])))

    merged = merge_reports(shards(first, second))

    assert [test["cassette"]["unused"] for test in merged["tests"]] == [[2], [2]]
    assert [test["cassette"]["status"] for test in merged["tests"]] == ["unused", "unused"]


def test_a_shared_cassette_every_recording_of_which_was_used_is_replayed() -> None:
    first = report(entry("a.py::t", cassette=shared("unused", [1])))
    second = report(entry("b.py::t", cassette=shared("replayed", [])))

    merged = merge_reports(shards(first, second))

    assert [test["cassette"]["status"] for test in merged["tests"]] == ["replayed", "replayed"]
    assert merged["summary"]["gate"]["passed"] is True


def write(folder: Path, name: str, data: dict[str, Any], *, compact: bool = False) -> Path:
    path = folder / name
    path.write_text(json.dumps(data) if compact else dumps_report(data), encoding="utf-8")
    return path


def with_context(test: dict[str, Any], text: str) -> dict[str, Any]:
    test["runs"][0]["context"] = {"iterations": [{"messages": [{"content": text}]}]}
    return test


def test_the_merged_text_is_the_report_the_plugin_would_write(tmp_path: Path) -> None:
    first = report(
        with_context(entry("a.py::t", cassette=shared("unused", [1, 2])), '18°C, "sunny"\n'),
        with_context(entry("c.py::t"), "},\n    {\n"),
    )
    second = report(
        entry("b.py::t", cassette=shared("unused", [2])), entry("d.py::t") | {"runs": []}
    )
    third = report(with_context(entry("e.py::t", tokens=3), "compact"))
    paths = [
        write(tmp_path, "1.json", first),
        write(tmp_path, "2.json", second),
        write(tmp_path, "3.json", third, compact=True),
    ]

    data, count = merged_text(read_reports(paths))

    assert count == 5
    assert data.decode() == dumps_report(
        merge_reports([(Path("1"), first), (Path("2"), second), (Path("3"), third)])
    )


def test_a_report_in_the_plugins_layout_is_split_at_its_tests() -> None:
    data = report(with_context(entry("a.py::t"), "x"), entry("b.py::t") | {"runs": []})

    split = split_report(dumps_report(data).encode())

    assert split is not None
    header, entries = split
    assert header == {key: value for key, value in data.items() if key != "tests"}
    assert [(e.light["nodeid"], e.light["runs"]) for e in entries] == [
        ("a.py::t", [None]),
        ("b.py::t", []),
    ]
    assert [e.whole() for e in entries] == data["tests"]


def test_a_truncated_report_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(dumps_report(report(entry("a.py::t")))[:-40])

    with pytest.raises(ReportError, match=r"cut.json is not JSON"):
        read_reports([path])


def test_a_test_without_what_the_merge_sums_is_refused(tmp_path: Path) -> None:
    broken = report(entry("a.py::t"))
    del broken["tests"][0]["stats"]["duration_s"]

    with pytest.raises(ReportError, match=r"tests\[0\] \(a.py::t\) has no stats.duration_s"):
        merge_reports([(tmp_path / "a.json", broken)])

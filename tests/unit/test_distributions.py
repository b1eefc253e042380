"""The distributions and the declared dependencies: what `pip install` gets.

* The wheel holds exactly the package (its modules and data files: ``py.typed``, the HTML
  report's assets, the prompt templates) and its metadata; the sdist holds the package,
  README, CHANGELOG, LICENSE and pyproject.toml (plus what hatchling adds), no test folder's
  README. Both are built with ``python -m build --no-isolation`` (build and hatchling come
  with the ``test`` extra), so no network is needed.
* The README that PyPI shows links only to absolute addresses (a relative link is dead there).
* ``constraints/lowest.txt`` pins exactly the lower bounds that pyproject.toml declares, so
  ``make test-lowest`` tests the versions a user may really have.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "pytest_agentctx"
#: Files that hatchling adds to every sdist (``.gitignore`` decides what a wheel built from
#: the sdist leaves out).
SDIST_EXTRAS = {"PKG-INFO", "pyproject.toml", ".gitignore"}
SDIST_DOCUMENTS = {"README.md", "CHANGELOG.md", "LICENSE"}
DIST_INFO_FILES = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"}
#: Links of Markdown: [text](target).
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _package_files() -> set[str]:
    """The package's files in the work tree, as the distributions name them."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / PACKAGE).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="build is in the test extra: pip install -e '.[test]'")
    pytest.importorskip("hatchling", reason="hatchling is in the test extra")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout}\n{done.stderr}"
    return out


def _only(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {directory}, found {found}"
    return found[0]


def test_wheel_holds_exactly_the_package_and_its_metadata(dist_dir: Path) -> None:
    with zipfile.ZipFile(_only(dist_dir, "*.whl")) as wheel:
        names = set(wheel.namelist())
    dist_info = {n for n in names if n.split("/")[0].endswith(".dist-info")}
    info_dir = next(iter(dist_info)).split("/")[0]

    assert names - dist_info == _package_files()
    assert {n.removeprefix(f"{info_dir}/") for n in dist_info} == DIST_INFO_FILES


def test_wheel_holds_the_package_data(dist_dir: Path) -> None:
    with zipfile.ZipFile(_only(dist_dir, "*.whl")) as wheel:
        names = set(wheel.namelist())

    assert {
        f"{PACKAGE}/py.typed",
        f"{PACKAGE}/reports/report_assets/report.css",
        f"{PACKAGE}/reports/report_assets/report.js",
        f"{PACKAGE}/runtime/templates/orchestrator.md",
        f"{PACKAGE}/runtime/templates/partials/tools.md",
    } <= names


def test_sdist_holds_the_package_and_its_documents_only(dist_dir: Path) -> None:
    with tarfile.open(_only(dist_dir, "*.tar.gz")) as sdist:
        members = [m.name for m in sdist.getmembers() if m.isfile()]
    top = {name.split("/", 1)[0] for name in members}
    assert len(top) == 1, f"the sdist has more than one top folder: {top}"
    names = {name.split("/", 1)[1] for name in members}

    assert names == _package_files() | SDIST_DOCUMENTS | SDIST_EXTRAS


def test_metadata_names_the_project_urls_and_pythons(dist_dir: Path) -> None:
    with zipfile.ZipFile(_only(dist_dir, "*.whl")) as wheel:
        metadata_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())

    urls = {url.split(",", 1)[0] for url in metadata.get_all("Project-URL") or []}
    assert urls == {"Homepage", "Documentation", "Changelog", "Issues"}
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Description-Content-Type"] == "text/markdown"
    pythons = {c for c in metadata.get_all("Classifier") or [] if re.search(r"3\.\d+$", c)}
    assert {c.rsplit(" ", 1)[1] for c in pythons} == {"3.11", "3.12", "3.13", "3.14"}


def test_readme_links_are_absolute() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")

    relative = [t for t in LINK.findall(text) if not t.startswith(("https://", "#"))]

    assert relative == [], "PyPI shows README.md: make these links https:// addresses"


def _declared_lower_bounds() -> dict[str, Version]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    bounds: dict[str, Version] = {}
    for line in [*project["dependencies"], *project["optional-dependencies"]["all"]]:
        requirement = Requirement(line)
        lower = [s.version for s in requirement.specifier if s.operator == ">="]
        assert len(lower) == 1, f"{line!r} in pyproject.toml has no single '>=' bound"
        bounds[requirement.name.lower()] = Version(lower[0])
    return bounds


def _pinned_lowest() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "constraints" / "lowest.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = Version(version.strip())
    return pins


def test_lowest_constraints_pin_the_declared_lower_bounds() -> None:
    assert _pinned_lowest() == _declared_lower_bounds(), (
        "constraints/lowest.txt and the '>=' bounds of pyproject.toml (dependencies and the "
        "'all' extra) differ: change both together, then run make test-lowest"
    )

"""What tests, scripts and helpers need beyond the names of ``pytest_agentctx``: the
cassette file API, the redactor, the wire formats' codecs and SSE framing, the snapshot
text, the pieces of a report, the arithmetic of a repeated test, the statistics of repeated
runs and of a comparison with a baseline, and the command run in process. The second
supported import path of the package (docs/architecture.md, "What you may import"): a name
imported from here keeps its meaning across releases, wherever the package defines it.

Each name is imported on first use (PEP 562), like the package's own names: importing
this module imports none of the modules that define them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For type checkers, which do not run ``__getattr__``: the same names as ``_PUBLIC``,
    # each re-exported explicitly (``X as X``). tests/unit/test_public_names.py checks
    # that the two agree.
    from .assertions.snapshots.serialization import serialize as serialize
    from .cli.main import main as main
    from .context.runs import RunRecord as RunRecord
    from .doubles.fake_llm import PLACEHOLDER_KEYS as PLACEHOLDER_KEYS
    from .reports.estimators import (
        Interval as Interval,
        bootstrap_mean as bootstrap_mean,
        clopper_pearson as clopper_pearson,
        normal_interval as normal_interval,
        pass_at_k as pass_at_k,
        pass_hat_k as pass_hat_k,
        stability as stability,
        wilson as wilson,
    )
    from .reports.failure_entry import failure_entry as failure_entry
    from .reports.gate import attach_baselines as attach_baselines
    from .reports.pairing import (
        DropCheck as DropCheck,
        Flips as Flips,
        NonInferiority as NonInferiority,
        check_drop as check_drop,
        flips as flips,
        mcnemar_exact as mcnemar_exact,
        non_inferior as non_inferior,
        paired_bootstrap_difference as paired_bootstrap_difference,
    )
    from .reports.record import build_record as build_record
    from .reports.repeats import (
        RepeatSpec as RepeatSpec,
        RepeatTally as RepeatTally,
        score_means as score_means,
    )
    from .traffic.cassettes.fileformat import Interaction as Interaction
    from .traffic.cassettes.network import NetworkGuard as NetworkGuard
    from .traffic.cassettes.redact import Redactor as Redactor
    from .traffic.cassettes.store import (
        dump_cassette as dump_cassette,
        load_cassette as load_cassette,
        write_cassette as write_cassette,
    )
    from .traffic.codecs.base import Codec as Codec, get_codec as get_codec
    from .traffic.codecs.sse import (
        SSEEvent as SSEEvent,
        format_sse as format_sse,
        parse_sse as parse_sse,
    )

#: Every name of this module, with the module of the package that defines it: the source
#: of ``__all__`` and of ``__getattr__``. Moving a definition changes its one line here.
_PUBLIC: dict[str, str] = {
    # cassette files: write one by hand, read one, print one
    "Interaction": "traffic.cassettes.fileformat",
    "write_cassette": "traffic.cassettes.store",
    "load_cassette": "traffic.cassettes.store",
    "dump_cassette": "traffic.cassettes.store",
    # secrets and the network
    "Redactor": "traffic.cassettes.redact",
    "NetworkGuard": "traffic.cassettes.network",
    # the wire formats
    "Codec": "traffic.codecs.base",
    "get_codec": "traffic.codecs.base",
    "SSEEvent": "traffic.codecs.sse",
    "format_sse": "traffic.codecs.sse",
    "parse_sse": "traffic.codecs.sse",
    # the fake model's placeholder provider keys
    "PLACEHOLDER_KEYS": "doubles.fake_llm",
    # snapshots
    "serialize": "assertions.snapshots.serialization",
    # the pieces of a report
    "RunRecord": "context.runs",
    "build_record": "reports.record",
    "failure_entry": "reports.failure_entry",
    "attach_baselines": "reports.gate",
    # repeated tests
    "RepeatSpec": "reports.repeats",
    "RepeatTally": "reports.repeats",
    "score_means": "reports.repeats",
    # the statistics of repeated runs: a pass rate's intervals, pass@k and pass^k
    "Interval": "reports.estimators",
    "wilson": "reports.estimators",
    "clopper_pearson": "reports.estimators",
    "normal_interval": "reports.estimators",
    "pass_at_k": "reports.estimators",
    "pass_hat_k": "reports.estimators",
    "stability": "reports.estimators",
    "bootstrap_mean": "reports.estimators",
    # ... and of a comparison with a baseline, pair by pair
    "Flips": "reports.pairing",
    "flips": "reports.pairing",
    "mcnemar_exact": "reports.pairing",
    "paired_bootstrap_difference": "reports.pairing",
    "NonInferiority": "reports.pairing",
    "non_inferior": "reports.pairing",
    "DropCheck": "reports.pairing",
    "check_drop": "reports.pairing",
    # the pytest-agentctx command, run in this process
    "main": "cli.main",
}

__all__ = [*_PUBLIC]


if not TYPE_CHECKING:  # type checkers read the imports above, and flag any other name

    def __getattr__(name: str) -> Any:
        """The name ``name`` of ``_PUBLIC``, looked up in its module (imported on first
        use) every time, so that a module imported again gives its new objects."""
        module = _PUBLIC.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(import_module(f"pytest_agentctx.{module}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

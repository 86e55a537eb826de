"""The benchmark registry (benchmarks/registry.py): every entry names configurations the
harness knows and reports under benchmarks/reports/; `python -m benchmarks` lists them and the
harness subcommands still parse."""

from __future__ import annotations

import pytest

from benchmarks.__main__ import main
from benchmarks.harness.configs import CONFIGS, PEER_CONFIGS
from benchmarks.registry import BENCHMARKS, listing


def test_every_entry_names_known_configurations_and_is_listed():
    text = listing()
    for bench in BENCHMARKS.values():
        assert bench.name in text and bench.description
        unknown = set(bench.configs) - set(CONFIGS) - set(PEER_CONFIGS)
        assert not unknown, f"{bench.name}: {sorted(unknown)}"


def test_no_name_lists_and_help_still_has_the_harness(capsys):
    main([])
    assert "retrieval" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "{run,compare,diff,configs}" in out and "soak" in out

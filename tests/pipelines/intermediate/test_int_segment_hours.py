"""The segment hours (`int_segment_hours`) summed from the decisions; the runner's check of the segments."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pytest

from pipelines import runner
from pipelines.errors import PipelinesError

if TYPE_CHECKING:
    from tests.pipelines.harness import Computed

STRINGS = (
    "decision_type, status, reason, candidate, model_identity_sha256, normalization, model_name, "
    "model_sha256, quantization, backend, device, instance_type"
)

# The segment hours as computed straight from the proposals, every row's strings grouped as they are: the
# reference the model (counts from `int_decisions`, strings read at each segment's first decision) must equal.
FROM_PROPOSALS = f"""
select hash({STRINGS}, option_ids) as segment, *
from (
    select
        {STRINGS}, hash(option_ids) as options_hash, epoch_us(received_at) // 3600000000 as hour,
        any_value(option_ids) as option_ids,
        min(received_at) as first_at, max(received_at) as last_at, count(*) as offered,
        sum(scorer_ms) as sum_scorer_ms, sum(prompt_tokens) as prompt_tokens,
        sum(cached_tokens) as cached_tokens
    from stg_proposals
    group by all
)
"""  # noqa: S608  (fixed text)


def test_segment_hours_equal_those_grouped_from_every_proposal(computed: Computed) -> None:
    """Given the five weeks of records (both decision types, scored and dropped, several fleets).

    Every (segment, hour) cell has the strings, option list, first and last instant, count and sums that
    grouping every proposal's own strings gives: the strings read at one decision per segment name it right.
    """
    columns = (
        f"segment, {STRINGS}, hour, option_ids, first_at, last_at, offered, sum_scorer_ms, "
        "prompt_tokens, cached_tokens"
    )
    con = computed.con
    (only_model, only_reference, cells, segments) = con.sql(
        f"with model as (select {columns} from int_segment_hours), reference as ({FROM_PROPOSALS}) "  # noqa: S608
        "select (select count(*) from (from model except all select " + columns + " from reference)), "
        "(select count(*) from (select " + columns + " from reference except all from model)), "
        "(select count(*) from model), (select count(distinct segment) from model)"
    ).fetchall()[0]
    assert (only_model, only_reference) == (0, 0)
    assert cells > segments > 4  # two types, scored and dropped rows, several fleets
    (offered,) = con.sql("select sum(offered) from int_segment_hours").fetchall()[0]
    (decisions,) = con.sql("select count(*) from stg_proposals").fetchall()[0]
    assert offered == decisions > 0


def segment_tables(con: duckdb.DuckDBPyConnection, named: list[int], decided: list[int]) -> None:
    """Tiny tables for the check: one `int_segments` row per hash in ``named``, decisions in ``decided``."""
    con.execute(
        "create or replace table int_segments as select unnest($named)::ubigint as segment",
        {"named": named},
    )
    con.execute(
        "create or replace table int_segment_hours as "
        "select segment, count(*) as offered from (select unnest($decided)::ubigint as segment) "
        "semi join int_segments using (segment) group by all",
        {"decided": decided},
    )
    con.execute(
        "create or replace table int_decisions as select unnest($decided)::ubigint as segment",
        {"decided": decided},
    )


def test_the_segment_check_passes_when_every_decision_is_named_once() -> None:
    """Given two segments, each named once, and three decisions in them: the run goes on."""
    con = duckdb.connect()
    segment_tables(con, named=[1, 2], decided=[1, 1, 2])
    runner.check_segments(con)


def test_two_segments_under_one_hash_stop_the_run() -> None:
    """Given one hash naming two string sets (two `int_segments` rows): the run stops before any mart."""
    con = duckdb.connect()
    segment_tables(con, named=[1, 1, 2], decided=[1, 2])
    with pytest.raises(PipelinesError, match="two segments share a hash"):
        runner.check_segments(con)


def test_decisions_whose_segment_is_not_named_stop_the_run() -> None:
    """Given a decision whose segment no `int_segment_hours` row names: the run stops, saying how many."""
    con = duckdb.connect()
    segment_tables(con, named=[1], decided=[1, 3, 3])
    with pytest.raises(PipelinesError, match="2 decisions have a segment int_segment_hours does not name"):
        runner.check_segments(con)

"""Spark SQL generated from the DuckDB models: SQLGlot's transpiler plus a few named rewrites.

The models under ``models/`` are the one definition of every metric. For Spark they are parsed as DuckDB
SQL, rewritten where the two engines differ (each rewrite below is one function, named after what it
replaces, and tested against DuckDB in ``tests/pipelines/test_spark.py``), and printed as Spark SQL.

- ``getvariable('x')`` -> the named parameter ``:x`` (bound by ``spark.sql(..., args=...)``).
- ``list(x order by y)`` -> ``transform(array_sort(collect_list(struct(y, x))), s -> s.v)``; ``list(distinct x
  order by x)`` -> ``array_sort(collect_set(x))``.
- ``l[i]`` (1-based) -> ``element_at(l, i)``; ``len(l)`` -> ``size(l)``; ``list_position`` ->
  ``nullif(array_position(...), 0)``; ``list_dot_product`` -> ``aggregate(zip_with(...))``.
- ``unnest(p), generate_subscripts(p, 1)`` -> ``inline(zip_with(p, sequence(1, size(p)), ...))``.
- ``hash(...) % m`` (the bootstrap's blocks and draws, whose values reach the marts) -> the
  ``duckdb_hash_mod`` UDF (DuckDB's own ``hash``, so both engines draw the same blocks); any other ``hash``
  (a grouping key only) -> Spark's ``xxhash64``.
- ``strftime(d, '%G-W%V')`` -> the ISO week label from ``extract(yearofweek ...)`` and ``weekofyear``.
- ``epoch_us`` -> ``unix_micros``; ``make_timestamp[tz](us)`` -> ``timestamp_micros``; ``d - to_days(n)`` ->
  ``date_sub(d, n)``; ``to_minutes(n)`` -> ``make_dt_interval(0, 0, n)``.
- ``quantile_cont(x, [q...])`` -> Spark's exact ``percentile`` (linear interpolation, as DuckDB), or
  ``percentile_approx`` with ``approx_quantiles`` (relative rank error 1/accuracy).
- Decimal literals -> doubles (Spark reads ``0.5`` as a DECIMAL); unsigned integer casts -> the next signed
  type; ``not materialized`` dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB

if TYPE_CHECKING:
    from collections.abc import Callable

    from pipelines.sqlmodels import Model

APPROX_ACCURACY = 10_000
"""``percentile_approx`` accuracy when approximate quantiles are chosen: rank error at most n / 10,000."""

UNSIGNED = {
    exp.DataType.Type.UTINYINT: "smallint",
    exp.DataType.Type.USMALLINT: "int",
    exp.DataType.Type.UINT: "bigint",
    exp.DataType.Type.UBIGINT: "bigint",
}


@dataclass(frozen=True)
class SparkOptions:
    """Engine choices: exact quantiles by default; approximate ones are selectable for very large weeks."""

    approx_quantiles: bool = False


class DuckDBAsWritten(DuckDB):
    """DuckDB, with list subscripts kept as written (1-based).

    SQLGlot would otherwise move literal and integer-typed subscripts to 0-based and leave the others;
    ``rewrite_lists`` needs one convention.
    """

    INDEX_OFFSET = 0


def parse(sql: str) -> exp.Expr:
    """A model's DuckDB SQL as a SQLGlot tree."""
    return sqlglot.parse_one(sql, read=DuckDBAsWritten)


def spark(expression: exp.Expr | str) -> exp.Expr:
    """A Spark SQL fragment as a tree (for the rewrites' replacements)."""
    return sqlglot.parse_one(expression, read="spark") if isinstance(expression, str) else expression


def _function_name(node: exp.Expr | None) -> str:
    if node is None:
        return ""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.key


def _first_argument(node: exp.Expr) -> exp.Expr:
    first: exp.Expr = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
    return first


def rewrite_variable(node: exp.Expr) -> exp.Expr:
    """``getvariable('x')`` -> the named parameter ``:x``."""
    if _function_name(node) == "getvariable":
        return exp.Placeholder(this=node.expressions[0].name)
    return node


def rewrite_ordered_list(node: exp.Expr) -> exp.Expr:
    """DuckDB's ordered ``list(...)`` aggregates -> Spark arrays sorted explicitly."""
    if not isinstance(node, exp.ArrayAgg) or not isinstance(node.this, exp.Order):
        return node
    inner, order = node.this.this, node.this.expressions
    if isinstance(inner, exp.Distinct):
        (value,) = inner.expressions
        if len(order) != 1 or order[0].this != value:
            raise ValueError(f"unsupported list(distinct ... order by ...): {node.sql('duckdb')}")
        return spark(f"array_sort(collect_set({value.sql('spark')}))")
    if len(order) != 1 or order[0].args.get("desc"):
        raise ValueError(f"unsupported list(... order by ...): {node.sql('duckdb')}")
    key = order[0].this.sql("spark")
    pairs = f"collect_list(struct({key} as k, {inner.sql('spark')} as v))"
    return spark(f"transform(array_sort({pairs}), s -> s.v)")


def rewrite_lists(node: exp.Expr) -> exp.Expr:
    """1-based ``l[i]``, ``len``, ``list_position`` and ``list_dot_product`` in Spark's array functions."""
    name = _function_name(node)
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        return exp.func("element_at", node.this, exp.cast(node.expressions[0], "int"))
    if isinstance(node, exp.Length):
        return exp.func("size", node.this)
    if isinstance(node, exp.ArrayPosition) or name == "list_position":
        items, value = node.expressions if isinstance(node, exp.Anonymous) else (node.this, node.expression)
        return spark(f"nullif(array_position({items.sql('spark')}, {value.sql('spark')}), 0)")
    if name == "list_dot_product":
        left, right = node.expressions
        return spark(
            f"aggregate(zip_with({left.sql('spark')}, {right.sql('spark')}, (x, y) -> x * y), "
            "cast(0 as double), (acc, v) -> acc + v)"
        )
    return node


def rewrite_subscripts(select: exp.Expr) -> exp.Expr:
    """``unnest(p) as v, generate_subscripts(p, 1) as i`` in one select -> ``inline(...) as (v, i)``."""
    if not isinstance(select, exp.Select):
        return select
    items = select.expressions
    aliased = [e for e in items if isinstance(e, exp.Alias)]
    unnest = [e for e in aliased if isinstance(e.this, (exp.Explode, exp.Unnest))]
    subscripts = [e for e in aliased if _function_name(e.this) == "generate_subscripts"]
    if not subscripts:
        return select
    (values,), (positions,) = unnest, subscripts
    array = values.this.this.sql("spark")
    pairs = spark(
        f"inline(zip_with({array}, sequence(1, size({array})), (v, i) -> struct(v as v, i as i))) "
        f"as ({values.alias}, {positions.alias})"
    )
    kept = [e for e in items if e is not values and e is not positions]
    select.set("expressions", [*kept, pairs])
    return select


def rewrite_hash(node: exp.Expr) -> exp.Expr:
    """``hash(...) % m`` -> ``duckdb_hash_mod(m, ...)``; any other ``hash(...)`` -> ``xxhash64(...)``."""
    if isinstance(node, exp.Mod) and _function_name(node.this) == "hash":
        modulus = node.expression.this if isinstance(node.expression, exp.Cast) else node.expression
        arguments = _hash_arguments(node.this)
        return exp.func(f"duckdb_hash_mod{len(arguments)}", *arguments, modulus)
    if _function_name(node) == "hash" and not isinstance(node.parent, exp.Mod):
        return exp.func("xxhash64", *_hash_arguments(node))
    return node


def _hash_arguments(node: exp.Expr) -> list[exp.Expr]:
    return list(node.expressions) if isinstance(node, exp.Anonymous) else [node.this, *node.expressions]


def rewrite_time(node: exp.Expr) -> exp.Expr:
    """DuckDB's epoch and interval helpers and the ``%G-W%V`` week label in Spark's functions."""
    name = _function_name(node)
    if name == "epoch_us" or isinstance(node, exp.UnixMicros):
        return exp.func("unix_micros", _first_argument(node))
    if name in {"make_timestamptz", "make_timestamp"} or isinstance(node, exp.UnixToTime):
        return exp.func("timestamp_micros", _first_argument(node))
    if isinstance(node, exp.Sub) and isinstance(node.expression, exp.ToDays):
        return exp.func("date_sub", node.this, node.expression.this)
    if name == "to_minutes":
        return spark(f"make_dt_interval(0, 0, {node.expressions[0].sql('spark')})")
    if isinstance(node, exp.TimeToStr) and node.args["format"].name == "%G-W%V":
        day = node.this.sql("spark")
        return spark(
            f"concat(cast(extract(yearofweek from {day}) as string), '-W', "
            f"lpad(cast(weekofyear({day}) as string), 2, '0'))"
        )
    return node


def rewrite_quantiles(node: exp.Expr, options: SparkOptions) -> exp.Expr:
    """``quantile_cont(x, [q...])`` -> exact ``percentile`` (or ``percentile_approx`` when chosen)."""
    if isinstance(node, exp.PercentileCont) or _function_name(node) == "quantile_cont":
        column, levels = node.expressions if isinstance(node, exp.Anonymous) else (node.this, node.expression)
        arguments = f"{column.sql('spark')}, {levels.sql('spark')}"
        if options.approx_quantiles:
            return spark(f"percentile_approx({arguments}, {APPROX_ACCURACY})")
        return spark(f"percentile({arguments})")
    return node


def rewrite_types(node: exp.Expr) -> exp.Expr:
    """Decimal literals as doubles; unsigned casts as signed; no ``not materialized``."""
    if isinstance(node, exp.Literal) and node.is_number and any(c in node.this for c in ".eE"):
        return exp.cast(node.copy(), "double")
    if isinstance(node, exp.DataType) and node.this in UNSIGNED:
        return exp.DataType.build(UNSIGNED[node.this], dialect="spark")
    if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
        node.set("materialized", None)
    return node


def bottom_up(tree: exp.Expr, rule: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """Apply ``rule`` to every node, children before their parents (a rewrite prints rewritten arguments)."""
    for node in reversed(list(tree.walk())):
        new = rule(node)
        if new is not node:
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return tree


def to_spark(sql: str, options: SparkOptions | None = None) -> str:
    """One model's DuckDB SQL as Spark SQL."""
    chosen = options or SparkOptions()
    tree = parse(sql)
    rules: list[Callable[[exp.Expr], exp.Expr]] = [
        rewrite_hash, rewrite_variable, rewrite_lists, rewrite_time, rewrite_types,
        lambda node: rewrite_quantiles(node, chosen), rewrite_ordered_list, rewrite_subscripts,
    ]
    for rule in rules:
        tree = bottom_up(tree, rule)
    return tree.sql("spark", pretty=True)


def spark_models(models: list[Model], options: SparkOptions | None = None) -> list[tuple[Model, str]]:
    """Every model with its Spark SQL, in order."""
    return [(model, to_spark(model.sql, options)) for model in models]

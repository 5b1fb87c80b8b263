"""athena.yaml: Glue tables matching what the sidecar and the pipelines write, and deployable.

The records tables are checked against contracts/records.py (records v1.2); the mart tables against the
Parquet files a real `pipelines run` writes from generated records; the projection templates against the
folders those files are in.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contracts import records as schema
from tests.infra.cfn import ROOT, Stack, load
from tests.infra.deploy import client, deploy

BUCKET = "semif-shadow-records-123456789012-us-east-1"
PARAMETERS = {"RecordsBucketName": BUCKET, "DecisionTypes": "ticket_routing,priority"}


def glue_type(arrow: pa.DataType) -> str:
    """The Glue/Athena column type for an Arrow type, as Athena reads Parquet."""
    if pa.types.is_list(arrow):
        return f"array<{glue_type(arrow.value_type)}>"
    if pa.types.is_decimal(arrow):
        return f"decimal({arrow.precision},{arrow.scale})"
    if pa.types.is_timestamp(arrow):
        return "timestamp"
    names = {pa.string(): "string", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.float64(): "double", pa.bool_(): "boolean", pa.date32(): "date"}
    return names[arrow]


def tables() -> dict[str, dict[str, Any]]:
    """Every table's resolved TableInput, by table name."""
    stack = Stack(load("athena.yaml"), PARAMETERS)
    return {t["TableInput"]["Name"]: t["TableInput"] for t in stack.resources("AWS::Glue::Table").values()}


def columns(table: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, type) of a table's data columns, in order."""
    return [(c["Name"], c["Type"]) for c in table["StorageDescriptor"]["Columns"]]


def run_cli(*args: str) -> None:
    """`semif-shadow` from this checkout."""
    binary = Path(sys.executable).with_name("semif-shadow")
    subprocess.run([str(binary), *args], check=True, capture_output=True,  # noqa: S603  (our console script)
                   env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated records (two decision types, five weeks) and the marts of one week computed from them."""
    tmp = tmp_path_factory.mktemp("athena")
    run_cli("pipelines", "generate", "--root", str(tmp / "records"), "--decisions", "3000", "--weeks", "5")
    run_cli("pipelines", "run", "--root", str(tmp / "records"), "--week", "2026-W48",
            "--out", str(tmp / "marts"), "--as-of", "2026-12-20T00:00:00Z")
    return tmp


def test_partition_columns_are_never_data_columns() -> None:
    """Glue rejects (and Athena misreads) a column that is both a partition key and a data column."""
    for name, table in tables().items():
        keys = {k["Name"] for k in table["PartitionKeys"]}
        assert keys, name
        assert not keys & {c for c, _ in columns(table)}, name


def test_records_tables_follow_the_records_schema() -> None:
    """The records tables follow contracts/records.py: its columns in order, decision_type the partition.

    proposals, outcomes and drops; types as Athena reads the Parquet.
    """
    found = tables()
    for name, arrow_schema in (("proposals", schema.PROPOSALS), ("outcomes", schema.OUTCOMES),
                               ("drops", schema.DROPS)):
        expected = [(f.name, glue_type(f.type)) for f in arrow_schema if f.name != "decision_type"]
        assert columns(found[name]) == expected


def test_mart_tables_match_what_pipelines_write(written: Path) -> None:
    """One table per mart, with the columns of the mart's Parquet file.

    Names, order and types; week is the partition.
    """
    found = {name.removeprefix("mart_"): t for name, t in tables().items() if name.startswith("mart_")}
    marts = sorted(p.name for p in (written / "marts").iterdir() if p.is_dir())
    assert sorted(found) == marts
    for mart in marts:
        (file,) = (written / "marts" / mart).glob("week=*/*.parquet")
        expected = [(f.name, glue_type(f.type)) for f in pq.read_schema(file) if f.name != "week"]
        assert columns(found[mart]) == expected, mart


def test_projection_templates_resolve_to_the_written_files(written: Path) -> None:
    """Each table's location template points at the folders the files are really in.

    With its projected values filled in, storage.location.template is a folder the sidecar's layout or the
    pipelines' output holds files in; dates use the projected format.
    """
    found = tables()
    prefix = f"s3://{BUCKET}/"
    for name in ("proposals", "outcomes"):
        template = found[name]["Parameters"]["storage.location.template"]
        assert found[name]["Parameters"]["projection.decision_type.values"] == "ticket_routing,priority"
        for file in (written / "records" / name).glob("*/*/*.parquet"):
            relative = file.parent.relative_to(written).as_posix()
            decision_type, date = re.fullmatch(r".*/decision_type=([^/]+)/date=([^/]+)", relative).groups()
            dt.datetime.strptime(date, "%Y-%m-%d")  # noqa: DTZ007  (yyyy-MM-dd, the projection's format)
            location = template.replace("${decision_type}", decision_type).replace("${date}", date)
            assert location == prefix + relative
    for mart_file in (written / "marts").glob("*/week=*/*.parquet"):
        mart, week = mart_file.parent.parent.name, mart_file.parent.name.removeprefix("week=")
        template = found[f"mart_{mart}"]["Parameters"]["storage.location.template"]
        assert template.replace("${week}", week) == prefix + mart_file.parent.relative_to(written).as_posix()
        assert week in found[f"mart_{mart}"]["Parameters"]["projection.week.values"].split(",")


def test_week_projection_lists_every_iso_week() -> None:
    """The week enum is every ISO week from 2026-W01 to 2028-W52 (2026 has a W53), by ISO 8601."""
    values = tables()["mart_funnel"]["Parameters"]["projection.week.values"].split(",")
    days = (dt.date(2026, 1, 1) + dt.timedelta(days=n) for n in range(3 * 366))
    expected = sorted({f"{y}-W{w:02d}" for y, w, _ in (d.isocalendar() for d in days) if y <= 2028})
    assert "2026-W53" in values
    assert values == expected


def test_database_tables_and_workgroup_deploy(moto_endpoint: str) -> None:
    """The stack deploys to moto's Glue and Athena.

    The workgroup enforces encrypted results in the records bucket, engine 3 and a scan limit.
    """
    deploy(Stack(load("athena.yaml"), PARAMETERS), moto_endpoint)
    glue = client("glue", moto_endpoint)
    names = {t["Name"] for t in glue.get_tables(DatabaseName="semif_shadow")["TableList"]}
    assert names == set(tables())
    proposals = glue.get_table(DatabaseName="semif_shadow", Name="proposals")["Table"]
    assert [k["Name"] for k in proposals["PartitionKeys"]] == ["decision_type", "date"]
    assert proposals["Parameters"]["projection.enabled"] == "true"
    group = client("athena", moto_endpoint).get_work_group(WorkGroup="semif-shadow")["WorkGroup"]
    configuration = group["Configuration"]
    assert configuration["EnforceWorkGroupConfiguration"] is True
    assert configuration["ResultConfiguration"]["OutputLocation"] == f"s3://{BUCKET}/athena-results/"
    assert configuration["ResultConfiguration"]["EncryptionConfiguration"] == {"EncryptionOption": "SSE_S3"}

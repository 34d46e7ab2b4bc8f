"""Every query's rows are typed by exactly one model (bench/dataset/query_rows.py): its columns, in order, with the
Python type of each SQL type; the metrics API returns them validated."""

from __future__ import annotations

import json
import types
from typing import Any, get_args

import pydantic
import pytest

from bench.dataset import query_rows as qr
from bench.dataset import reported, synthetic
from bench.dataset.metrics import RANKING_ROWS, SQL_DIR, Metrics, dumps, sql_text
from bench.paths import DATA_DIR

MODELS = qr.QueryRow.__subclasses__()
#: DuckDB's type of a column -> the Python type its values arrive as (timestamps: ISO strings, see metrics.query).
PYTHON_TYPE = {
    "VARCHAR": str,
    "BIGINT": int,
    "HUGEINT": int,
    "INTEGER": int,
    "DOUBLE": float,
    "BOOLEAN": bool,
    "VARCHAR[]": list[str],
    "INTEGER[]": list[int],
    "DOUBLE[]": list[float],
    "TIMESTAMP WITH TIME ZONE": str,
    # trajectory_workloads' Autocomp beam, one struct per iteration
    "STRUCT(iteration INTEGER, phase VARCHAR, first_sample INTEGER, last_sample INTEGER, n BIGINT, parents INTEGER[], "
    "entered INTEGER[])[]": list[qr.BeamIteration],
}


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> Metrics:
    data = tmp_path_factory.mktemp("data")
    (data / "reported").mkdir()
    for csv in (DATA_DIR / "reported").glob("*.csv"):
        (data / "reported" / csv.name).write_bytes(csv.read_bytes())
    reported.build(data)
    synthetic.generate(data, n_submissions=3, n_workloads=3, n_samples=4)
    return Metrics(data, suite=synthetic.workload_names(3))


def _params(sql: str) -> dict[str, Any]:
    known = {
        "track": "cpu/small",
        "workload": synthetic.workload_names(1)[0],
        "submission": "synthetic-002",
        "basis": "measured",
    }
    return {k: v for k, v in known.items() if f"${k}" in sql}


def _declared(model: type[qr.QueryRow], column: str) -> Any:
    """The Python type a model declares for a column, without its `| None`."""
    annotation = model.model_fields[column].annotation
    if isinstance(annotation, types.UnionType):
        (annotation,) = [a for a in get_args(annotation) if a is not type(None)]
    return annotation


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.QUERY)
def test_each_model_has_exactly_its_querys_columns_and_types(metrics: Metrics, model: type[qr.QueryRow]) -> None:
    text = sql_text(model.QUERY)
    cursor = metrics.con.execute(text, _params(text))
    columns = [(d[0], str(d[1])) for d in cursor.description]
    assert [c for c, _ in columns] == list(model.model_fields), model.QUERY
    for column, sql_type in columns:
        assert _declared(model, column) == PYTHON_TYPE[sql_type], (model.QUERY, column, sql_type)


def test_every_query_the_api_types_has_a_model_and_rows_arrive_validated(metrics: Metrics) -> None:
    queries = {m.QUERY for m in MODELS}
    assert {p.stem for p in SQL_DIR.glob("*.sql")} - queries == {
        "base",
        "published_results",
        "published_samples",
        "published_reported_summary",
    }  # Arrow tables, untyped
    assert {m.QUERY for m in RANKING_ROWS.values()} <= queries
    rows = metrics.per_benchmark("cpu/small")
    assert rows and all(isinstance(r, qr.PerBenchmarkRow) for r in rows)
    assert all(isinstance(r, qr.LeaderboardReadinessRow) for r in metrics.leaderboard("cpu/small"))
    assert dumps(metrics.query("per_benchmark", track="cpu/small")) == dumps(rows)  # the CLI prints the same


def test_a_row_is_strict_frozen_and_closed() -> None:
    row = qr.FastPRow.with_nulls(submission="s", p=1.0)
    assert row.get("fast_p") is None and row.get("sandbox", "absent") == "absent"  # a column of other queries
    with pytest.raises(pydantic.ValidationError):
        qr.FastPRow.with_nulls(submission="s", p="1.0")  # no coercion: a changed SQL type fails here
    with pytest.raises(pydantic.ValidationError):
        qr.FastPRow.with_nulls(submission="s", renamed_column=1)  # a column the model lacks
    with pytest.raises(pydantic.ValidationError):
        row.p = 2.0  # type: ignore[misc]


JSON_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean", list[str]: "array", list[int]: "array"}


def _json_type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        prop = defs[prop["$ref"].rsplit("/", 1)[1]]
    kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    (kind,) = [k for k in kinds if k != "null"]
    return kind


def test_the_published_json_schema_describes_the_models_columns() -> None:
    """api/leaderboard.schema.json (bench/site/schemas/) is checked against the query models it publishes: each
    property it names is a column of the model, of the model's type."""
    from bench.site.publish import LEADERBOARD_SCHEMA

    doc = json.loads(LEADERBOARD_SCHEMA.read_text())
    defs = doc["$defs"]
    parts = {  # the objects of the document and the models whose rows they are
        "row": (qr.LeaderboardRow, qr.LeaderboardReadinessRow),
        "provenance": (qr.ProvenanceSummaryRow,),
        "fast_p": (qr.FastPRow,),
    }
    objects = {
        "row": defs["row"],
        "provenance": defs["provenance"],
        "fast_p": defs["track"]["properties"]["fast_p"]["items"],
    }
    for part, models in parts.items():
        for column, prop in objects[part]["properties"].items():
            declared = {_declared(m, column) for m in models if column in m.model_fields}
            assert declared, f"{part}.{column}: no column of that name"
            assert {JSON_TYPE[t] for t in declared} == {_json_type(prop, defs)}, (part, column)

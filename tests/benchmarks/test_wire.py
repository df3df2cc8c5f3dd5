"""benchmarks/wire.py: a few batches on a tiny R-MAT graph, with the shared datasets' skip reason."""

from __future__ import annotations

from tests.benchmarks.script import run_benchmark


def test_a_tiny_run_reports_bytes_seconds_and_compressors(tmp_path):
    args = ["--rmat-scale", "11", "--rmat-pairs", "12000", "--batches", "3", "--batch-size", "64", "--repeats", "1"]
    args += ["--real", "tolokers", "--data-dir", str(tmp_path), "--shared", str(tmp_path / "absent")]
    report = run_benchmark("wire.py", *args, output=tmp_path / "w.json")
    assert set(report["graphs"]) == {"rmat"} and "absent" in report["skipped"]["tolokers"]
    rmat = report["graphs"]["rmat"]
    sizes = rmat["bytes_per_batch"]
    nodes, edges = rmat["nodes_per_batch"], rmat["edges_per_batch"]
    # int64 frames: 8 bytes per node for n_id and for y, 24 per edge; compact: int32 ids, uint16 sources
    assert abs(sizes["int64"]["n_id"] - 8 * nodes) <= 8 and abs(sizes["int64"]["e_id"] - 8 * edges) <= 8
    assert abs(sizes["compact"]["n_id"] - 4 * nodes) <= 4 and abs(sizes["compact"]["src"] - 2 * edges) <= 2
    assert "e_id" not in sizes["compact"] and abs(sizes["compact_with_e_id"]["e_id"] - 4 * edges) <= 4
    assert abs(sizes["compact"]["y"] - nodes) <= 1  # 16 classes: int8 labels
    assert sizes["ratio"] == round(sizes["int64"]["total"] / sizes["compact"]["total"], 2) >= 3
    assert rmat["three_x_fewer_bytes"] and sizes["ratio_with_e_id"] < sizes["ratio"]
    assert sizes["framed"]["compact"] >= sizes["compact"]["total"]
    assert abs(sizes["feature_rows"] - nodes * 128 * 4) <= 512  # float32 rows of 128 (means are rounded)
    for key in ("int64_encode", "int64_decode", "compact_encode", "compact_decode"):
        assert rmat["seconds_per_batch"][key]["median_ms"] > 0
    missing = report["machine"]["compressors_missing"] or {}
    measured_or_missing = set(rmat["compression"]) | set(missing)
    assert "lz4" in measured_or_missing and ("zstd-1" in measured_or_missing or "zstd" in measured_or_missing)
    for result in rmat["compression"].values():
        assert result["ratio"] > 0 and result["compress_mb_per_s"] > 0 and result["verdict"]
    for why in missing.values():
        assert "not installed" in why

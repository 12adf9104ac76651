"""benchmarks.dra_cel runs at a tiny size and reports every figure (no timing is asserted)."""

from benchmarks import dra_cel


def test_reports_every_figure():
    report = dra_cel.run(nodes=2, devices=3, pods=2)
    assert report["nodes"] == 2
    assert set(report["matches_first_us"]) == set(dra_cel.SELECTORS) == set(report["matches_repeat_us"])
    for key in ("compile_new_expression_us", "compile_selector_cached_us", "device_view_us",
                "first_pod_selectors_on_every_device_ms", "next_pods_selectors_on_every_device_ms"):
        assert report[key] >= 0

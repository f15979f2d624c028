"""`cuco space`: the design space of a spec, its rules, valid points, bounds and best points
(all simulated), and `--point` checks that refuse a point with one line naming every rule."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import design_space as ds
from cuco.cli import app
from cuco.space_report import point_report, space_report
from cuco.spec_loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE = str(ROOT / "examples" / "allgather_gemm")
AG = ds.get_pattern("allgather_gemm")


def _space(*args):
    return CliRunner().invoke(app, ["space", EXAMPLE, *args])


def _json(*args) -> dict:
    res = _space(*args, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def _one_line_error(res, *needles) -> str:
    assert res.exit_code == 2, res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "-- fix: " in lines[0], res.stderr
    for n in needles:
        assert n in lines[0]
    return lines[0]


@pytest.mark.parametrize("hardware", ["H100", "A100"])
def test_valid_count_equals_design_space_valid_points(hardware):
    data = _json("--hardware", hardware)
    expected = len(ds.valid_points(AG, ds.get_profile(hardware)))
    assert data["valid"] == expected and data["hardware"] == hardware
    assert sum(b["count"] for b in data["valid_per_backend"]) == expected
    excluded = sum(g["count"] for g in data["family_exclusions"])
    assert data["product"] - data["removed_by_rules"] - excluded == expected
    assert {r["name"] for r in data["rules"]} == {r.name for r in ds.RULES}


def test_rules_count_the_points_they_remove():
    by_name = {r["name"]: r for r in _json("--hardware", "A100")["rules"]}
    # A100 has 108 SMs: comm_ctas 32 > 27 is removed, in every combination of the other dims.
    ctas = by_name["comm_ctas_leave_three_quarters_to_compute"]
    values = ds.dimension_values(AG)
    others = 1
    for d in ("backend", "placement", "sync_scope", "issuer", "chunk_bytes"):
        others *= len(values[d])
    assert ctas["removes"] == others * sum(c > 108 // 4 for c in values["comm_ctas"])
    assert by_name["sequential_synchronises_once"]["removes"] > 0
    assert all(r["only_this_rule"] <= r["removes"] for r in by_name.values())


def test_text_output_labels_every_time_simulated():
    res = _space("--top", "3")
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    assert "SIMULATED" in out and "by score" in out and "tensor-core" in out
    assert "fused_persistent_needs_fine_signals" in out and "removes" in out
    assert f"valid points: {len(ds.valid_points(AG, ds.get_profile('H100')))}" in out
    assert "T_comp" in out and "T_comm" in out and "baseline" in out and "prefill-m4096" in out
    assert "per backend:" in out and "lsa" in out
    for doc in ds.DIMENSION_DOCS["placement"].values():
        assert doc.split(":")[0][:40] in " ".join(out.split())


def test_bounds_and_top_points_agree_with_the_model_and_the_one_score():
    from design_space.code_features import TENSOR_CORE_TYPICAL
    from design_space.figures import geomean
    spec = load_spec(EXAMPLE)
    data = _json("--top", "5")
    assert data["timing_source"] == "simulated" and data["compute_assumption"] == TENSOR_CORE_TYPICAL.source
    top = data["top"]["points"]
    assert data["top"]["shape"] == spec.headline.name and len(top) == 5
    assert [p["score"] for p in top] == sorted((p["score"] for p in top), reverse=True)
    hw, point = ds.get_profile("H100"), ds.DesignPoint.parse_key(top[0]["point"])
    ests = {s.name: ds.estimate(AG.cost(s.dims, 8, spec.dtype), point, 8, hw, "bf16", features=TENSOR_CORE_TYPICAL)
            for s in spec.shapes}
    # the score is the geometric mean over the spec's shapes, the same as the leaderboard's
    assert top[0]["score"] == pytest.approx(geomean([e.baseline / e.simulated for e in ests.values()]), rel=1e-3)
    head = ests[spec.headline.name]
    assert top[0]["simulated_us"] == pytest.approx(head.simulated * 1e6, rel=1e-4)
    assert top[0]["speedup"] == pytest.approx(head.baseline / head.simulated, rel=1e-3)
    for row in data["shapes"]:
        assert row["bound_us"] == pytest.approx(max(row["t_comp_us"], row["t_comm_us"]))
        assert row["best_speedup"] <= row["ceiling"] * (1 + 1e-3)


def test_shape_and_world_choose_what_is_ranked():
    data = _json("--shape", "decode-m128", "--world", "4", "--top", "2")
    assert data["world"] == 4 and data["top"]["shape"] == "decode-m128" and len(data["top"]["points"]) == 2
    _one_line_error(_space("--shape", "nope"), "no shape 'nope'", "decode-m128")
    _one_line_error(_space("--world", "3"), "world size 3", "not divisible")


def test_unknown_hardware_lists_the_profiles():
    line = _one_line_error(_space("--hardware", "Z9000"), "unknown hardware profile")
    for name in ds.profile_names():
        assert name in line


def test_valid_point_prints_its_simulated_estimate():
    res = _space("--point", "lsa/fused_persistent/per_tile_signal/warp/64K/8")
    assert res.exit_code == 0, res.stderr
    assert "valid" in res.stdout and "SIMULATED" in res.stdout and "prefill-m16384" in res.stdout
    data = _json("--point", "lsa/fused_persistent/per_tile_signal/warp/64K/8")
    assert data["valid"] and data["timing_source"] == "simulated" and len(data["shapes"]) == 4
    assert all(0 < s["sol"] <= 1 and s["speedup"] > 0 for s in data["shapes"])


def test_point_refusal_names_every_rule_it_breaks():
    line = _one_line_error(_space("--hardware", "A100", "--point", "lsa/fused_persistent/global_barrier/warp/64K/32"),
                           "fused_persistent_needs_fine_signals", "comm_ctas_leave_three_quarters_to_compute")
    assert "A100" in line


def test_multimem_point_is_refused_on_a100_from_the_real_command(tmp_path):
    res = subprocess.run([CUCO, "space", EXAMPLE, "--hardware", "A100", "--point",
                          "multimem/fused_persistent/per_tile_signal/warp/64K/8"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "multimem_needs_hopper_and_nvswitch" in lines[0] and "-- fix: " in lines[0]


def test_unknown_value_lists_the_valid_values():
    _one_line_error(_space("--point", "lsa/fused/per_tile_signal/warp/64K/8"), "placement", "fused_persistent")
    _one_line_error(_space("--point", "lsa/fused"), "cannot parse")


def test_multimem_is_absent_or_removed_on_a100_in_the_listing():
    a100 = {b["backend"]: b for b in _json("--hardware", "A100", "--top", "1")["valid_per_backend"]}
    mm = a100["multimem"]
    assert mm["count"] == 0
    assert not mm["rendered"] or mm["removed_by"] == ["multimem_needs_hopper_and_nvswitch"]


def test_point_outside_the_spec_restrictions_is_refused(tmp_path):
    text = (ROOT / "examples" / "allgather_gemm" / "spec.py").read_text()
    assert 'hardware="H100",' in text
    (tmp_path / "spec.py").write_text(text.replace('hardware="H100",',
                                                   'hardware="H100",\n    restrictions={"backend": ("lsa",)},'))
    res = CliRunner().invoke(app, ["space", str(tmp_path), "--point", "gin/fused_persistent/per_tile_signal/warp/64K/8"])
    _one_line_error(res, "[restricted]", "backend to lsa")
    data = json.loads(CliRunner().invoke(app, ["space", str(tmp_path), "--json", "--top", "1"]).stdout)
    assert data["valid"] == len(ds.valid_points(AG, ds.get_profile("H100"), {"backend": ("lsa",)}))


def test_point_the_templates_do_not_render_is_refused():
    lsa_only = dataclasses.replace(AG, name="lsa_only", supported={**AG.supported, "backend": (ds.Backend.LSA,)})
    with pytest.raises(ds.DesignPointError, match=r"\[not_rendered\] the lsa_only templates do not render backend=gin"):
        point_report("gin/fused_persistent/per_tile_signal/warp/64K/8", load_spec(EXAMPLE), lsa_only,
                     ds.get_profile("H100"), 8)
    listing = space_report(load_spec(EXAMPLE), lsa_only, ds.get_profile("H100"), 8, top=1)
    assert "gin" in next(d for d in listing["dimensions"] if d["name"] == "backend")["not_rendered"]


def _multimem_family(**changes):
    return dataclasses.replace(AG, name="mm_family",
                               supported={**AG.supported, "backend": (ds.Backend.LSA, ds.Backend.MULTIMEM)}, **changes)


def test_multimem_backend_counts_zero_on_a100_naming_the_rule():
    spec, fam = load_spec(EXAMPLE), _multimem_family()
    a100 = {b["backend"]: b for b in space_report(spec, fam, ds.get_profile("A100"), 8, top=1)["valid_per_backend"]}
    assert a100["multimem"]["rendered"] and a100["multimem"]["count"] == 0
    # blamed on the rule every multimem point breaks there, not on rules that fire only somewhere
    assert a100["multimem"]["removed_by"] == ["multimem_needs_hopper_and_nvswitch"]
    h100 = space_report(spec, fam, ds.get_profile("H100"), 8, top=1)
    per_backend = {b["backend"]: b["count"] for b in h100["valid_per_backend"]}
    assert per_backend["multimem"] > 0
    assert h100["valid"] == len(ds.valid_points(fam, ds.get_profile("H100")))


def test_family_exclusions_are_counted_and_refused_with_their_reason():
    why = "this toy family renders no thread issuer with per-peer signals"
    fam = _multimem_family(excluded=lambda p: why if (p.issuer is ds.Issuer.THREAD and
                                                         p.sync_scope is ds.SyncScope.PER_PEER_SIGNAL) else None)
    spec, h100 = load_spec(EXAMPLE), ds.get_profile("H100")
    data = space_report(spec, fam, h100, 8, top=1)
    (group,) = data["family_exclusions"]
    assert group["reason"] == why and group["count"] > 0
    assert data["product"] - data["removed_by_rules"] - group["count"] == data["valid"]
    assert data["valid"] == len(ds.valid_points(fam, h100))
    with pytest.raises(ds.DesignPointError, match="toy family renders no thread"):
        point_report("lsa/split_put_wait/per_peer_signal/thread/64K/8", spec, fam, h100, 8)

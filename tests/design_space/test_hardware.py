"""Hardware profiles: chips, interconnects, fabrics and the NODESxGPUS:NETWORK name grammar."""

import pytest
from pydantic import ValidationError

import design_space as ds
from design_space import hardware
from design_space.hardware import INTERCONNECTS, Fabric, HardwareProfile, ranks_per_node


def test_builtin_profiles_carry_their_interconnects():
    links = {name: ds.get_profile(name).link_bytes_per_s for name in ("A100", "H100", "H200", "B200")}
    assert links == {"A100": 300e9, "H100": 450e9, "H200": 450e9, "B200": 900e9}
    assert ds.get_profile("A100-PCIe").link_bytes_per_s == 25e9
    assert ds.get_profile("H100-PCIe").link_bytes_per_s == 50e9
    assert {ds.get_profile(n).fabric for n in ("H100", "A100-mesh", "H100-NVL", "H100-PCIe")} == set(Fabric)


def test_b200_is_blackwell_with_its_published_figures():
    b200 = ds.get_profile("B200")
    assert (b200.arch, b200.sms, b200.l2_bytes) == ("sm_100", 148, 126 << 20)
    assert b200.peak_flops["bf16"] == pytest.approx(2.25e15)
    assert b200.hbm_bytes_per_s == pytest.approx(8e12)
    assert b200.nvswitch and b200.multimem


def test_plain_name_is_one_full_node_with_the_default_network():
    h100 = ds.get_profile("h100")
    assert (h100.name, h100.nodes, h100.gpus_per_node, h100.world) == ("H100", 1, 8, 8)
    assert h100.network == INTERCONNECTS["ib400"]
    assert ds.get_profile("H100:1x8:ib400") == h100


def test_topology_and_network_suffixes_derive_a_profile():
    hw = ds.get_profile("H100:2x8:ib400")
    assert (hw.name, hw.nodes, hw.gpus_per_node, hw.world) == ("H100:2x8:ib400", 2, 8, 16)
    roce = ds.get_profile("a100:4x8:roce200")
    assert roce.network.kind.value == "roce" and roce.network.bytes_per_s == 25e9
    assert roce.network.alpha_s > ds.get_profile("A100:4x8:ib200").network.alpha_s
    assert ds.get_profile("H100:ib200").network == INTERCONNECTS["ib200"]
    assert ds.get_profile("H100-PCIe:1x4:none").network is None


@pytest.mark.parametrize("bad", ["H900", "H100:2x8:myrinet", "H100:1x16", "H100:0x8", "H100:2x8:none",
                                 "H100:2x8:ib400:extra", "A100-mesh:1x8"])
def test_bad_names_raise_with_the_grammar_in_the_fix(bad):
    with pytest.raises(ds.SpecError) as info:
        ds.get_profile(bad)
    assert "NODES" in info.value.fix or "ib400" in info.value.fix


def test_profile_names_lists_the_bases_a_cli_can_take():
    names = ds.profile_names()
    assert {"A100", "A100-PCIe", "H100", "H100-PCIe", "H100-NVL", "H200", "B200"} <= set(names)
    assert all(ds.get_profile(n).name == n for n in names)


def test_profiles_are_frozen_and_reject_contradictions():
    h100 = ds.get_profile("H100")
    with pytest.raises(ValidationError):
        h100.sms = 1
    fields = h100.model_dump(exclude={"name", "fabric"})
    with pytest.raises(ValueError, match="contradicts"):
        HardwareProfile(**{**fields, "name": "X", "nvswitch": False, "fabric": "nvswitch"})
    with pytest.raises(ValueError, match="network"):
        HardwareProfile(**{**fields, "name": "X", "nodes": 2, "network": None})


def test_plugins_register_profiles_built_the_old_way(monkeypatch):
    monkeypatch.setattr(hardware, "_PROFILES", dict(hardware._PROFILES))
    legacy = dict(name="Plugin-GPU", arch="sm_90", sms=100, l2_bytes=1 << 20, hbm_bytes_per_s=1e12,
                  peak_flops={"bf16": 1e14}, link_bytes_per_s=100e9, nvswitch=False, multimem=False)
    ds.register_profile(HardwareProfile(**legacy))
    hw = ds.get_profile("plugin-gpu:2x4:ib200")
    assert hw.fabric is Fabric.MESH and (hw.nodes, hw.gpus_per_node) == (2, 4)
    with pytest.raises(ds.SpecError):
        ds.register_profile(HardwareProfile(**{**legacy, "name": "a:b"}))


def test_ranks_spread_over_the_profile_nodes_and_must_fit():
    two_nodes = ds.get_profile("H100:2x8:ib400")
    assert ranks_per_node(16, two_nodes) == (2, 8)
    assert ranks_per_node(8, two_nodes) == (2, 4)
    assert ranks_per_node(8, ds.get_profile("H100")) == (1, 8)
    assert ds.get_profile("H100").world_problem(16)
    with pytest.raises(ds.SpecError, match="16 GPUs"):
        ranks_per_node(16, ds.get_profile("H100"))


def test_nic_bandwidth_is_capped_by_the_gpu_pcie_link():
    assert ds.get_profile("A100-PCIe:1x8:ib400").nic_bytes_per_s() == 25e9
    assert ds.get_profile("H100:2x8:ib400").nic_bytes_per_s() == 50e9
    assert ds.get_profile("H100-PCIe:1x4:none").nic_bytes_per_s() == 0.0


def test_describe_names_the_fabric_and_network():
    text = ds.get_profile("H100:2x8:ib400").describe()
    assert "2x8" in text and "nvswitch" in text and "InfiniBand" in text

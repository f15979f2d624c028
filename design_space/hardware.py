"""Hardware profiles: the figures the analytic model and the validity rules need.

Figures are from REFERENCE section 3 (vendor peak numbers; measured practice noted there).
Latencies are typical published/measured orders of magnitude, used only by the model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from design_space.errors import SpecError

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class HardwareProfile(BaseModel):
    model_config = _FROZEN

    name: str
    arch: str  # nvcc target, e.g. "sm_90"
    sms: int
    l2_bytes: int
    hbm_bytes_per_s: float
    peak_flops: dict[str, float]  # dtype name -> dense FLOP/s (tensor cores where they apply)
    link_bytes_per_s: float  # NVLink per GPU, one way
    nvswitch: bool
    multimem: bool
    gpus_per_node: int = 8
    link_alpha_s: float = 1.5e-6  # one hop / signal latency over NVLink
    launch_s: float = 3.0e-6  # host launch overhead per kernel on a stream
    barrier_s: float = 3.0e-6  # device-side cross-rank barrier
    per_sm_copy_bytes_per_s: float = 30e9  # one CTA's peer-store bandwidth
    copy_engine_bytes_per_s: float = 0.0  # DMA peer copies; 0 = same as link


_PROFILES: dict[str, HardwareProfile] = {}


def register_profile(profile: HardwareProfile) -> None:
    """Add a profile (built-ins and plugins go through here)."""
    _PROFILES[profile.name.lower()] = profile


def get_profile(name: str) -> HardwareProfile:
    try:
        return _PROFILES[name.lower()]
    except KeyError:
        raise SpecError(
            f"unknown hardware profile {name!r}",
            f"use one of: {', '.join(sorted(_PROFILES))}",
        ) from None


def profile_names() -> tuple[str, ...]:
    return tuple(sorted(_PROFILES))


register_profile(
    HardwareProfile(
        name="A100",
        arch="sm_80",
        sms=108,
        l2_bytes=40 << 20,
        hbm_bytes_per_s=2.04e12,
        peak_flops={"bf16": 312e12, "fp16": 312e12, "fp32": 19.5e12},
        link_bytes_per_s=300e9,
        nvswitch=True,
        multimem=False,  # NVLink SHARP arrives with Hopper + NVSwitch gen 3
        per_sm_copy_bytes_per_s=25e9,
    )
)
H100 = HardwareProfile(
    name="H100",
    arch="sm_90",
    sms=132,
    l2_bytes=50 << 20,
    hbm_bytes_per_s=3.35e12,
    peak_flops={"bf16": 989e12, "fp16": 989e12, "fp32": 67e12},
    link_bytes_per_s=450e9,
    nvswitch=True,
    multimem=True,
)
register_profile(H100)
# H200: the H100's compute and NVLink with faster, larger HBM3e.
register_profile(H100.model_copy(update={"name": "H200", "hbm_bytes_per_s": 4.8e12}))

"""GPU execution of candidates: shared-library builds with co-residency-checked launches, a rank
worker (virtual ranks on one GPU, or one process per GPU over NCCL), verify and bench, and the
GPU health check. Importing this package is cheap: torch is imported only inside the worker."""

from evaluator.gpu.api import BenchOutcome, VerifyOutcome, bench, gpu_available, verify
from evaluator.gpu.health import HealthReport, check_health, require_healthy

__all__ = ["BenchOutcome", "HealthReport", "VerifyOutcome", "bench", "check_health", "gpu_available",
           "require_healthy", "verify"]

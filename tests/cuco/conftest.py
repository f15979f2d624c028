"""Fixtures of the cuco package's tests."""

import pytest
import torch.distributed as dist


@pytest.fixture
def one_rank(tmp_path):
    """A one-rank gloo group for code that calls torch.distributed (an adapter, a user's layer)."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()

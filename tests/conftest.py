import pytest
import torch


@pytest.fixture(autouse=True)
def float64_and_seed():
    """Exact arithmetic for hand-computed values, and a fixed seed for random inputs."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    yield
    torch.set_default_dtype(previous)

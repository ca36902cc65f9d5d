"""The model and batches test_api.py and test_optim.py train."""

import torch


def small_cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 16), torch.nn.ReLU(),
        torch.nn.Linear(16, 3)).double()


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 1, 8, 8, dtype=torch.float64, generator=g)
    y = torch.randint(0, 3, (32,), generator=g)
    return x, y

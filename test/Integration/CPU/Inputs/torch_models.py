# Modules for export-errors.test.
import torch
from torch import nn


def Unsupported():
    return nn.Sequential(nn.Linear(8, 8), nn.Softplus(), nn.Linear(8, 3))


def TanhGelu():
    return nn.Sequential(nn.Linear(8, 8), nn.GELU(approximate="tanh"),
                         nn.Linear(8, 3))


class Cumsum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)


def FunctionalOp():
    return nn.Sequential(nn.Linear(8, 3), Cumsum())


def Supported():
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))


class ScaleByBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x):
        return x * self.scale


def Buffer():
    return nn.Sequential(ScaleByBuffer(), nn.Linear(8, 3))


class DataDependent(nn.Module):
    def forward(self, x):
        return x if x.sum() > 0 else -x


def Untraceable():
    return nn.Sequential(DataDependent(), nn.Linear(8, 3))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return x + torch.relu(self.fc(x))


def Nested():
    return nn.Sequential(Residual(), nn.Linear(8, 3))

"""Small PyTorch models for the exporter's tests and the side-by-side bench.

Each function returns a fresh nn.Module; sizes are arguments so that tests
use CI-sized shapes and benches realistic ones.
"""
import torch
from torch import nn


def mlp(layers=4, width=32, classes=10):
    mods = []
    for i in range(layers):
        mods.append(nn.Linear(width, width if i + 1 < layers else classes))
        if i + 1 < layers:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


def small_resnet(width=8, classes=10):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, 1, 1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.MaxPool2d(2, 2),
        BasicBlock(width, width, 1), BasicBlock(width, 2 * width, 2),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(2 * width, classes))

# Modules for export-errors.test.
import torch
from torch import nn


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


def ShapesAndBuffers():
    return nn.Sequential(Shapes(), nn.Linear(8, 3))


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


class AddToInput(nn.Module):
    def forward(self, x):
        return x.add_(1)


def InPlaceInput():
    return nn.Sequential(AddToInput(), nn.Linear(8, 3))


class Detached(nn.Module):
    def forward(self, x):
        return x * x.detach()


def Detach():
    return nn.Sequential(nn.Linear(8, 8), Detached(), nn.Linear(8, 3))


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x), x


def TwoOutputs():
    return Pair()


def Transposed():
    return nn.Sequential(nn.Unflatten(1, (2, 2, 2)), nn.ConvTranspose2d(2, 2, 2),
                         nn.Flatten(), nn.Linear(18, 3))


class Shapes(nn.Module):
    """Shape-dependent Python, chunks, functional calls and a buffer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm([2, 4])
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8))

    def forward(self, x):
        n, c = x.shape
        a, b = self.fc(x).chunk(2, dim=1)
        h = torch.cat([nn.functional.silu(b), nn.functional.hardswish(a)], 1)
        h = self.norm(h.view(n, 2, c // 2)).reshape(n, c) * self.scale
        return h.mean([1], keepdim=True) + h


class CachedWeight(nn.Module):
    """Keeps its own reference to a parameter, as nn.RNN's _flat_weights."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(8))
        self.cache = [self.weight]

    def forward(self, x):
        return x * self.cache[0]


def Cached():
    return nn.Sequential(CachedWeight(), nn.Linear(8, 3))


class Pools(nn.Module):
    """Adaptive average pooling to a size that does not divide the input,
    max pooling with ceil_mode, a strided slice, pad and roll."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.adapt = nn.AdaptiveAvgPool2d((2, 3))
        self.fc = nn.Linear(4 * 2 * 3, 3)

    def forward(self, x):
        h = self.pool(self.conv(x.view(x.shape[0], 2, 2, 2).repeat(1, 1, 3, 4)))
        h = nn.functional.pad(h, (1, 0, 0, 1)).roll(1, dims=3)[:, :, ::2]
        return self.fc(self.adapt(h).flatten(1))


def PoolsModel():
    return Pools()


def Dropout():
    return nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.25), nn.ReLU(), nn.Linear(16, 3))


class DropPath(nn.Module):
    """A residual branch dropped per sample, as torchvision's stochastic
    depth (mode "row") does."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        keep = torch.empty([x.shape[0], 1]).bernoulli_(0.75).div_(0.75)
        return x + self.fc(x) * keep


def StochasticDepth():
    return nn.Sequential(DropPath(), nn.Linear(8, 3))


class Selects(nn.Module):
    """Conditions computed from the input (where, masked_fill, logic on
    masks), maximum and minimum, amax/amin/max, index_select, indexing and
    gather by constant indices, average pooling whose ceil_mode adds a
    window, without count_include_pad and with a divisor override."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 12)
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.out = nn.Linear(12 + 5 + 2 * (16 + 9 + 4) + 2, 3)
        g = torch.Generator().manual_seed(1)
        self.register_buffer("perm", torch.randperm(12, generator=g))
        self.register_buffer("pick", torch.randint(-12, 12, (8, 5), generator=g))

    def forward(self, x):
        h = self.fc(x)
        m = (h > 0.1) & ~(x[:, :1] < -1.0)
        h = torch.where(m, h, 0.5 * h).masked_fill((h < -0.8) | (h > 2.5), -0.8)
        calm = (h > -5).all(1, keepdim=True) & (h > 0.8).any(1, keepdim=True).logical_not()
        h = torch.where(calm, h, 0.9 * h)
        h = torch.maximum(h, -h.mean(1, keepdim=True)) + torch.minimum(h, x.sum(1, True))
        h = h - h.amax(1, keepdim=True).detach() + h.amin(0) + h.max()
        h = h.index_select(1, self.perm)[:, self.perm - 12]  # negative: from the end
        g = torch.gather(h, 1, self.pick % 12)
        img = self.conv(h[:, :9].reshape(-1, 1, 3, 3).repeat(1, 1, 2, 2))  # 6 x 6
        a = nn.functional.avg_pool2d(img, 3, 2, 1, ceil_mode=True,
                                     count_include_pad=False)           # 4 x 4
        b = nn.functional.avg_pool2d(img, (2, 3), (2, 2), ceil_mode=True)  # 3 x 3
        c = nn.functional.avg_pool2d(img, 3, 3, divisor_override=5)      # 2 x 2
        pooled = torch.cat([a.flatten(2), b.flatten(2), c.flatten(2)], 2).flatten(1)
        return self.out(torch.cat([h, g, pooled, x[:, :2]], 1))


def SelectsModel():
    return Selects()


class Tokens(nn.Module):
    """Token ids as data: an embedding with a padding row, a padding mask
    from them, a shifted slice, ids reshaped, and a gather by an id per
    row."""

    def __init__(self, vocab=32, width=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, width, padding_idx=3)
        self.fc = nn.Linear(width, vocab)
        self.out = nn.Linear(2 * vocab, 5)

    def forward(self, ids):
        e = self.emb(ids[:, 1:])                             # shifted ids
        e = e.masked_fill((ids[:, :-1] == 0).unsqueeze(-1), 0.0)
        logits = self.fc(e)                                  # [n, t-1, vocab]
        picked = torch.gather(logits, 2, ids[:, :-1].unsqueeze(-1)).squeeze(-1)
        first = self.emb.weight.index_select(0, ids.reshape(-1)[:4]).sum()
        return self.out(torch.cat([logits.mean(1), picked.mean(1, True)
                                   .expand(-1, logits.shape[2])], 1)) + first


class MaxDim(nn.Module):
    def forward(self, x):
        return x.max(1, keepdim=True).values * x


def MaxOverDim():
    return nn.Sequential(nn.Linear(8, 8), MaxDim(), nn.Linear(8, 3))


class GatherRows(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.fc = nn.Linear(8, 3)

    def forward(self, ids):
        e = self.emb(ids)
        return self.fc(torch.gather(e, 2, ids.unsqueeze(-1).expand(-1, -1, 8)).sum(1))


def GatherByIds():
    return GatherRows()


class TwoIndices(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("i", torch.tensor([0, 1]))

    def forward(self, x):
        return x[self.i, self.i].sum() + x


def SeveralIndices():
    return nn.Sequential(nn.Linear(8, 8), TwoIndices(), nn.Linear(8, 3))


class IdsModel(nn.Module):
    """Token ids through `ids_op` into an embedding and a linear layer."""

    def __init__(self, ids_op):
        super().__init__()
        self.ids_op = ids_op
        self.emb = nn.Embedding(16, 4)
        self.fc = nn.Linear(4, 3)

    def forward(self, ids):
        return self.fc(self.emb(self.ids_op(ids)).sum(1))


def BitwiseIds():
    return IdsModel(lambda ids: ids & 7)


def IdsAgainstHalf():
    return IdsModel(lambda ids: ids * (ids > 0.5))


class AllOfFloats(nn.Module):
    def forward(self, x):
        return x * x.all(1, keepdim=True)


def AllFloats():
    return nn.Sequential(nn.Linear(8, 8), AllOfFloats(), nn.Linear(8, 3))

"""PyTorch functions that the exporter maps to one train op each.

Call them in a model's forward pass where PyTorch itself has no single op
for the thing (a causal mask is a masked_fill with a triangular buffer in
plain PyTorch): they run as ordinary PyTorch code, and torch.fx keeps them as
one call that remat_export.py recognizes.
"""
import torch
import torch.fx


def causal_mask(scores):
    """Sets scores[..., i, j] to -inf where j > i (train.causal_mask)."""
    t = scores.shape[-1]
    upper = torch.ones(t, t, dtype=torch.bool, device=scores.device).triu(1)
    return scores.masked_fill(upper, float("-inf"))


torch.fx.wrap("causal_mask")

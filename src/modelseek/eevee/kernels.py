"""Batched kernels: fit many meta-models (one per (subset, split) pair) in one computation.

``mlp_block`` trains the protocol's MLPs with a hand-written forward and backward pass; ``ridge_block``
solves ridge regressions in closed form. Both take the same arguments: the split data
(:class:`~modelseek.eevee.data.SplitData`), the config, and for each network p of the block its candidate
``cand[p]`` (a row of the padded input-column table ``idx``/``mask``, with fan-in ``fan``) and its split
``split[p]``; both return each network's test loss (and, with ``return_pred``, its test predictions in the
split's z-units).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import MetaConfig
    from .data import SplitData


def init_params(d: SplitData, cfg: MetaConfig, cand, split, idx, mask, fan, out=None):
    """Initial weights of networks (cand, split) of the MLP (its parameters: ``cfg.model_params``): nn.Linear's
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from the
    per-split full-width draws, restricted to each subset's input columns. With ``out`` (the six parameter
    tensors), the weights are written into them."""
    import torch  # lazy: torch

    hidden = cfg.model_params.hidden
    U1, u1, U2, u2 = d.initial_draws(hidden)
    ci = idx[cand]                                         # (P, D)
    cm = mask[cand]                                        # (P, D)
    scale = fan[cand].rsqrt()                              # (P,)
    W1 = U1[split.unsqueeze(1), ci] * (cm * scale.unsqueeze(1)).unsqueeze(2)     # (P, D, H)
    b1 = (u1[split] * scale.unsqueeze(1)).unsqueeze(1)                            # (P, 1, H)
    hs = 1.0 / math.sqrt(hidden)
    om = d.out_mask[split].unsqueeze(1)                                           # (P, 1, M)
    W2 = U2[split] * hs * om                                                      # (P, H, M)
    b2 = u2[split].unsqueeze(1) * hs * om                                         # (P, 1, M)
    g = torch.ones_like(b1)
    be = torch.zeros_like(b1)
    params = [W1, b1, g, be, W2, b2]
    if out is None:
        return [p.contiguous() for p in params]
    for dst, src in zip(out, params):
        dst.copy_(src)
    return out


def flat_views(buf, shapes):
    """Consecutive views of the flat tensor ``buf`` with the given shapes."""
    views, o = [], 0
    for sh in shapes:
        size = math.prod(sh)
        views.append(buf[o: o + size].view(sh))
        o += size
    return views


def mlp_block(d: SplitData, cfg: MetaConfig, cand, split, idx, mask, fan, return_pred: bool = False):
    """Train networks (cand[p], split[p]) together; return each one's test loss (and test predictions). The
    MLP's own parameters (width, optimiser) are ``cfg.model_params``
    (:class:`~modelseek.eevee.meta_models.mlp.MLPParams`).

    The forward and backward passes are written out as batched matmuls and elementwise passes into
    preallocated buffers; each linear layer's bias is one more row of its weight matrix, fed by a column of
    ones, so the matmul that computes the weight gradient computes the bias gradient too. AdamW is torch's
    fused CPU kernel applied once per epoch to all the networks' parameters, which live as views in one
    flat tensor (their gradients in another): the same elementwise update as one ``torch.optim.AdamW`` per
    network, in one kernel call. (Autograd would build and free a graph of ~20 (P x n x 100) buffers per
    epoch; ``tests/eevee`` checks the result against the nn.Module loop.)
    """
    import torch  # lazy: torch

    P, D = cand.shape[0], idx.shape[1]
    hp = cfg.model_params
    n, M, H = d.Xtr.shape[1], d.Xtr.shape[2], hp.hidden
    shapes = [(P, D + 1, H), (P, 1, H), (P, 1, H), (P, H + 1, M)]
    total = sum(math.prod(sh) for sh in shapes)
    flat, gflat = torch.empty(total), torch.empty(total)
    exp_avg, exp_avg_sq, step = torch.zeros(total), torch.zeros(total), torch.zeros(())
    W1a, g, be, W2a = flat_views(flat, shapes)            # W1a = [W1; b1], W2a = [W2; b2]
    gW1a, gg, gbe, gW2a = flat_views(gflat, shapes)
    W1, b1, g0, be0, W2, b2 = init_params(d, cfg, cand, split, idx, mask, fan)
    W1a[:, :D].copy_(W1), W1a[:, D:].copy_(b1), g.copy_(g0), be.copy_(be0)
    W2a[:, :H].copy_(W2), W2a[:, H:].copy_(b2)
    W2v = W2a[:, :H]                                       # the weights without the bias row

    ci = idx[cand].unsqueeze(1)                            # (P, 1, D)
    cm = mask[cand].unsqueeze(1)

    def inputs(Z):                                         # [X, 1] for the rows of Z
        Xa = torch.ones(P, Z.shape[1], D + 1)
        torch.gather(Z, 2, ci.expand(-1, Z.shape[1], -1), out=Xa[..., :D]).mul_(cm)
        return Xa

    Xa = inputs(d.Xtr[split])
    Xat = Xa.transpose(1, 2).contiguous()
    A2 = d.Atr[split] * 2.0                                # dLoss/dyhat = 2 A (yhat - Y)
    YA2 = d.Xtr[split] * A2
    slope, eps = hp.negative_slope, hp.ln_eps
    beta1, beta2 = hp.betas
    leaky = torch._C._nn.leaky_relu
    leaky_back = torch.ops.aten.leaky_relu_backward.grad_input
    ln_back = torch.ops.aten.native_layer_norm_backward
    h, a, xhat, tmp, dl, dh = (torch.empty(P, n, H) for _ in range(6))
    mu, rstd = torch.empty(P, n, 1), torch.empty(P, n, 1)
    la = torch.ones(P, n, H + 1)                           # [LayerNorm output, 1]
    ln_out = la[..., :H]
    r = torch.empty(P, n, M)
    ln_mask = [True, False, False]

    def layer_norm(x):                                     # xhat = (x - mean) * rstd, no affine
        torch.mean(x, -1, keepdim=True, out=mu)
        torch.sub(x, mu, out=xhat)
        torch.mean(torch.mul(xhat, xhat, out=tmp), -1, keepdim=True, out=rstd).add_(eps).rsqrt_()
        return xhat.mul_(rstd)

    for _ in range(hp.epochs):
        torch.bmm(Xa, W1a, out=h)
        layer_norm(leaky(h, slope, out=a))
        torch.addcmul(be, xhat, g, out=ln_out)
        torch.bmm(la, W2a, out=r).mul_(A2).sub_(YA2)
        torch.bmm(la.transpose(1, 2), r, out=gW2a)
        torch.bmm(r, W2v.transpose(1, 2), out=dl)
        torch.sum(torch.mul(dl, xhat, out=tmp), 1, keepdim=True, out=gg)
        torch.sum(dl, 1, keepdim=True, out=gbe)
        da = ln_back(dl.mul_(g), a, [H], mu, rstd, None, None, ln_mask)[0]
        leaky_back(da, h, slope, False, grad_input=dh)
        torch.bmm(Xat, dh, out=gW1a)
        step += 1
        torch._fused_adamw_([flat], [gflat], [exp_avg], [exp_avg_sq], [], [step], amsgrad=False, lr=hp.lr,
                            beta1=beta1, beta2=beta2, weight_decay=hp.weight_decay, eps=hp.adam_eps,
                            maximize=False, grad_scale=None, found_inf=None)
    yhat = _mlp_predict(inputs(d.Xte_in[split]), W1a, W2a, g, be, slope, eps)
    loss = ((yhat - d.Xte[split]) ** 2 * d.Ate[split]).sum((1, 2))
    return (loss, yhat) if return_pred else loss


def _mlp_predict(Xa, W1a, W2a, g, be, slope: float, eps: float):
    """The predictions of the networks of :func:`mlp_block` for the inputs ``Xa`` = [X, 1] (P x n x D+1)."""
    import torch  # lazy: torch

    P, n, H = Xa.shape[0], Xa.shape[1], g.shape[-1]
    a = torch._C._nn.leaky_relu(torch.bmm(Xa, W1a), slope)
    xc = a - a.mean(-1, keepdim=True)
    lt = torch.ones(P, n, H + 1)
    torch.addcmul(be, xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + eps), g, out=lt[..., :H])
    return torch.bmm(lt, W2a)


def ridge_block(d: SplitData, cfg: MetaConfig, cand, split, idx, mask, fan=None, return_pred: bool = False):
    """Ridge meta-models: all target columns from the subset's input columns, in the split's training
    z-units, with an unpenalised intercept (missing training targets are the training mean, like missing
    inputs). Solved in the dual, W = X^T (X X^T + alpha I)^-1 Y, from one eigen-
    decomposition of each n x n Gram matrix (n = training models, so a few microseconds per fit); alpha is
    chosen per fit among ``cfg.model_params.alphas`` (the ridge's own parameter,
    :class:`~modelseek.eevee.meta_models.ridge.RidgeParams`) by the exact leave-one-out error of the training models,
    e_i = (y_i - yhat_i) / (1 - h_ii), weighted like the loss. Float64 throughout. (``fan`` is unused: it is
    the MLP's initialisation scale, kept so that every meta-model's kernel has one signature.)"""
    import torch  # lazy: torch

    f = torch.float64
    ci = idx[cand].unsqueeze(1)
    cm = mask[cand].unsqueeze(1).to(f)
    n, nte = d.Xtr.shape[1], d.Xte.shape[1]
    X = torch.gather(d.Xtr[split], 2, ci.expand(-1, n, -1)).to(f) * cm               # (P, n, D)
    Xte = torch.gather(d.Xte_in[split], 2, ci.expand(-1, nte, -1)).to(f) * cm        # (P, nte, D)
    Y, A = d.Xtr[split].to(f), d.Atr[split].to(f)                                      # (P, n, M)
    # an unpenalised intercept: centre on the training models (already ~0 without the leak; with --leaky
    # the z-scores are the whole table's), fit the centred data, add the training means back
    x_mean, y_mean = X.mean(1, keepdim=True), Y.mean(1, keepdim=True)
    X, Xte, Y = X - x_mean, Xte - x_mean, Y - y_mean
    s, U = torch.linalg.eigh(X @ X.transpose(1, 2))                                    # (P, n), (P, n, n)
    s = s.clamp(min=0.0)
    UtY = U.transpose(1, 2) @ Y                                                        # (P, n, M)
    alphas = torch.tensor(cfg.model_params.alphas, dtype=f)                            # (G,)
    shrink = s.unsqueeze(1) / (s.unsqueeze(1) + alphas[None, :, None])                 # (P, G, n)
    fitted = torch.einsum("pij,pgj,pjm->pgim", U, shrink, UtY)                         # (P, G, n, M)
    # leverages of the model *with* its intercept: the centring is part of the fit, so leaving model i out
    # must re-centre without it (else x_i = -sum of the others' x leaks y_i): the intercept adds 1/n (the
    # centred columns of X are orthogonal to the ones vector)
    h = torch.einsum("pij,pgj->pgi", U * U, shrink) + 1.0 / n                          # (P, G, n)
    loo = (Y.unsqueeze(1) - fitted) / (1.0 - h).clamp(min=1e-12).unsqueeze(-1)
    crit = (loo * loo * A.unsqueeze(1)).sum((2, 3))                                   # (P, G)
    best = alphas[crit.argmin(1)]                                                      # (P,)
    coef = UtY / (s + best[:, None]).unsqueeze(-1)                                     # (K + aI)^-1 Y in U's basis
    yhat = (Xte @ X.transpose(1, 2)) @ (U @ coef) + y_mean                             # (P, nte, M)
    loss = ((yhat - d.Xte[split].to(f)) ** 2 * d.Ate[split].to(f)).sum((1, 2)).float()
    return (loss, yhat.float()) if return_pred else loss

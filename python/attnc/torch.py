"""attnc kernels inside PyTorch models (docs/python.md).

`function(kernel)` wraps a kernel as a torch.autograd.Function: the forward
pass runs the kernel on the tensors' memory; the backward pass runs the
kernel's `NAME_backward` (generated with `backward = true`, docs/language.md
§9.6) and raises a clear error when the library has none.
"""
import torch as _torch

from . import Kernel

__all__ = ["function", "MultiheadAttention"]


def _backward_kernel(kernel):
    name = kernel.name + "_backward"
    return kernel._library[name] if name in kernel._library else None


def function(kernel):
    """A callable with the kernel's arguments (by position or keyword) that
    records the call for autograd. Inputs and outputs are torch tensors;
    gradients flow to every float input."""
    if not isinstance(kernel, Kernel):
        raise TypeError("attnc.torch.function() takes an attnc kernel, not %s"
                        % type(kernel).__name__)
    names = [a.name for a in kernel.inputs]
    backward = _backward_kernel(kernel)

    class AttncFunction(_torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            results = kernel(**dict(zip(names, inputs)))
            results = results if isinstance(results, tuple) else (results,)
            ctx.save_for_backward(*inputs, *results)
            return results if len(results) > 1 else results[0]

        @staticmethod
        def backward(ctx, *grads):
            if backward is None:
                raise RuntimeError(
                    "attnc: kernel '%s' has no backward kernel; compile it with "
                    "'backward = true' (docs/language.md section 9.6) to train through it"
                    % kernel.name)
            # NAME_backward differentiates `out`; a loss that also reads
            # weights or lse would lose that part of its gradient silently.
            for a, g in zip(kernel.outputs[1:], grads[1:]):
                if g is not None and bool(_torch.any(g != 0)):
                    raise RuntimeError(
                        "attnc: kernel '%s': gradients through '%s' are not supported; "
                        "only 'out' is differentiated (detach '%s' before using it in the "
                        "loss)" % (kernel.name, a.name, a.name))
            saved = ctx.saved_tensors
            inputs, results = saved[:len(names)], saved[len(names):]
            by_name = dict(zip(names, inputs))
            by_name.update({a.name: r for a, r in zip(kernel.outputs, results)})
            d_out = grads[0] if grads[0] is not None else _torch.zeros_like(results[0])
            by_name["d_out"] = d_out.to(results[0].dtype).contiguous()
            args = {a.name: by_name[a.name] for a in backward.inputs}
            d = backward(**args)
            d = d if isinstance(d, tuple) else (d,)
            d_by_name = {a.name: g for a, g in zip(backward.outputs, d)}
            return tuple(d_by_name.get("d_" + n) if ctx.needs_input_grad[i] else None
                         for i, n in enumerate(names))

    def call(*args, **kwargs):
        bound = kernel._bind(args, kwargs)
        for a in kernel.outputs:
            if bound.get(a.name) is not None:
                raise TypeError("attnc.torch.function: outputs are allocated by autograd; "
                                "do not pass '%s'" % a.name)
        return AttncFunction.apply(*[bound[n] for n in names])

    call.__name__ = kernel.name
    call.kernel = kernel
    return call


class MultiheadAttention(_torch.nn.Module):
    """A drop-in for torch.nn.MultiheadAttention backed by attnc kernels,
    compiled on first use for the configuration seen (heads, widths, masks,
    need_weights) and cached in the runtime's disk cache. Same constructor
    arguments, forward signature and state_dict keys, so a checkpoint of the
    torch module loads as it is.

    When key and value are one tensor of width embed_dim (self-attention, or
    cross-attention over one memory), one kernel does the projections, the
    attention and the output projection (`project = qkv_out`); otherwise
    torch projects and a `layout = bshd` kernel attends. Supported:
    `key_padding_mask` (bool or uint8, True/nonzero = padding: the kernel's
    `key_padding` mask), `attn_mask` that is causal (bool: True above the
    diagonal; float: -inf above it), need_weights with average_attn_weights,
    batch_first, kdim and vdim, unbatched inputs. Refused with an error:
    add_bias_kv, add_zero_attn, dropout > 0 in training mode, other
    attn_masks. When autograd records the call (a parameter or an input
    requires grad), the kernel is compiled with `backward = true` and the
    gradients of the inputs and parameters come from its NAME_backward."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise ValueError("attnc.torch.MultiheadAttention: add_bias_kv and add_zero_attn "
                             "are not supported")
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        kdim = embed_dim if kdim is None else kdim
        vdim = embed_dim if vdim is None else vdim
        # torch's own module makes the parameters (same names, shapes and
        # initialisation), which this one adopts: hence the same state_dict.
        ref = _torch.nn.MultiheadAttention(embed_dim, num_heads, dropout, bias,
                                           batch_first=batch_first, kdim=kdim, vdim=vdim,
                                           device=device, dtype=dtype)
        for name, parameter in ref._parameters.items():
            self.register_parameter(name, parameter)
        self.out_proj = ref.out_proj
        self._qkv_same_embed_dim = ref._qkv_same_embed_dim
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.kdim, self.vdim = batch_first, kdim, vdim
        self.head_dim = embed_dim // num_heads
        self._kernels = {}

    def _kernel(self, key_spec):
        if key_spec not in self._kernels:
            from . import compile as _compile
            projecting, bias, causal, padding, weights, train = key_spec
            lines = ["kernel mha {",
                     "  heads = %d; head_dim = %d" % (self.num_heads, self.head_dim)]
            if projecting:
                lines.append("  project = qkv_out; model_dim = %d" % self.embed_dim)
                if self.kdim != self.embed_dim:
                    lines.append("  kv_model_dim = %d" % self.kdim)
                lines.append("  proj_bias = %s" % ("true" if bias else "false"))
            else:
                lines.append("  layout = bshd")
            masks = (["causal"] if causal else []) + (["key_padding"] if padding else [])
            if masks:
                lines.append("  mask = " + " & ".join(masks))
            outputs = ["out"] + (["weights"] if weights else []) + (["lse"] if train else [])
            lines.append("  outputs = " + ", ".join(outputs))
            if train:
                lines.append("  backward = true")
            lines.append("}")
            self._kernels[key_spec] = function(_compile("\n".join(lines) + "\n").mha)
        return self._kernels[key_spec]

    @staticmethod
    def _is_causal(attn_mask, L, S):
        if attn_mask is None:
            return False
        if attn_mask.dim() != 2 or tuple(attn_mask.shape) != (L, S):
            raise ValueError("attnc.torch.MultiheadAttention: attn_mask must be a causal "
                             "[L, S] mask; got shape %s" % (tuple(attn_mask.shape),))
        ip = _torch.arange(L).unsqueeze(1) + (S - L)
        hidden = _torch.arange(S).unsqueeze(0) > ip
        if attn_mask.dtype == _torch.bool:
            causal = _torch.equal(attn_mask, hidden)
        else:
            causal = bool(_torch.all(_torch.isneginf(attn_mask[hidden]))) and bool(
                _torch.all(attn_mask[~hidden] == 0))
        if not causal:
            raise ValueError("attnc.torch.MultiheadAttention: only a causal attn_mask is "
                             "supported (True or -inf above the diagonal)")
        return True

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True):
        if self.training and self.dropout > 0:
            raise RuntimeError("attnc.torch.MultiheadAttention: dropout is a training-time "
                               "operation attnc does not generate; use dropout=0.0")
        # One projecting kernel when key and value are one tensor (checked
        # before any reshape makes them distinct objects), of the query's width
        # or of kdim = vdim (kv_model_dim).
        same_kv = key is value and self.kdim == self.vdim
        batched = query.dim() == 3
        if not batched:
            query, key, value = (t.unsqueeze(1 if not self.batch_first else 0)
                                 for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if not self.batch_first:  # [L, N, E] -> [N, L, E]
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        N, L, E = query.shape
        S = key.shape[1]
        causal = self._is_causal(attn_mask, L, S)
        bias = self.in_proj_bias is not None
        E_, H, Dh = self.embed_dim, self.num_heads, self.head_dim
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.split(E_)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b_q, b_k, b_v = self.in_proj_bias.split(E_) if bias else (None, None, None)
        train = _torch.is_grad_enabled() and (
            any(p.requires_grad for p in self.parameters()) or
            any(t.requires_grad for t in (query, key, value)))
        kernel = self._kernel((same_kv, bias, causal, key_padding_mask is not None,
                               bool(need_weights), train))
        pad = []
        if key_padding_mask is not None:
            pad = [(key_padding_mask != 0).to(_torch.uint8).contiguous()]
        if same_kv:
            # The kernel's projection weights are nn.Linear's [out, in]
            # (docs/language.md, version 2): the module's own tensors, never copied.
            args = [query.contiguous(), key.contiguous()]
            args += [w.contiguous() for w in (w_q, w_k, w_v, self.out_proj.weight)]
            if bias:
                args += [b_q, b_k, b_v, self.out_proj.bias]
            result = kernel(*args, *pad)
        else:
            q = _torch.nn.functional.linear(query, w_q, b_q).view(N, L, H, Dh)
            k = _torch.nn.functional.linear(key, w_k, b_k).view(N, S, H, Dh)
            v = _torch.nn.functional.linear(value, w_v, b_v).view(N, S, H, Dh)
            result = kernel(q.contiguous(), k.contiguous(), v.contiguous(), *pad)
        result = result if isinstance(result, tuple) else (result,)
        named = dict(zip((a.name for a in kernel.kernel.outputs), result))
        out, weights = named["out"], named.get("weights")
        if not same_kv:
            out = _torch.nn.functional.linear(out.reshape(N, L, E_), self.out_proj.weight,
                                              self.out_proj.bias)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        if not self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1 if not self.batch_first else 0)
            if weights is not None:
                weights = weights.squeeze(0)
        return out, weights

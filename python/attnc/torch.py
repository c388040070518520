"""attnc kernels inside PyTorch models (docs/python.md).

`function(kernel)` wraps a kernel as a torch.autograd.Function: the forward
pass runs the kernel on the tensors' memory; the backward pass runs the
kernel's `NAME_backward` (generated with `backward = true`, docs/language.md
§9.6) and raises a clear error when the library has none.
"""
import torch as _torch

from . import Kernel

__all__ = ["function"]


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
            saved = ctx.saved_tensors
            inputs, results = saved[:len(names)], saved[len(names):]
            by_name = dict(zip(names, inputs))
            by_name.update({a.name: r for a, r in zip(kernel.outputs, results)})
            by_name["d_out"] = grads[0].contiguous()
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

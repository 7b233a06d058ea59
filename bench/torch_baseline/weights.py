"""Strict loading of checkpoint tensors into a model built on the meta device."""
from torch import nn


class WeightError(RuntimeError):
    pass


def load_strict(module, checkpoint, prefix, ignore=()):
    """Fill every parameter of `module` from the tensors named `prefix` + its name.

    Strict both ways: a parameter the file lacks, a tensor under `prefix` the model does
    not use (unless it starts with one of the `ignore` prefixes), or a shape that
    differs is an error listing them all, so a wrong layout can never half-load.
    Returns the number of tensors loaded.
    """
    wanted = dict(module.named_parameters())
    in_file = {n[len(prefix):] for n in checkpoint.names() if n.startswith(prefix)}
    missing = sorted(wanted.keys() - in_file)
    unused = sorted(n for n in in_file - wanted.keys() if not n.startswith(tuple(ignore)))
    bad_shape = sorted(f"{n}: file {checkpoint.shape(prefix + n)}, model {tuple(p.shape)}"
                       for n, p in wanted.items()
                       if n in in_file and checkpoint.shape(prefix + n) != tuple(p.shape))
    problems = [_describe("missing from the file", missing),
                _describe("in the file but not used by the model", unused),
                _describe("with the wrong shape", bad_shape)]
    problems = [p for p in problems if p]
    if problems:
        raise WeightError(f"{checkpoint.path}: tensors under '{prefix}' do not match "
                          f"the model:\n" + "\n".join(problems))
    for name in wanted:
        owner_name, _, leaf = name.rpartition(".")
        owner = module.get_submodule(owner_name)
        setattr(owner, leaf, nn.Parameter(checkpoint.read_f32(prefix + name),
                                          requires_grad=False))
    left = [n for n, p in module.named_parameters() if p.is_meta]
    if left:  # cannot happen unless a parameter is shared under two names
        raise WeightError(f"parameters left without weights: {left[:5]}")
    return len(wanted)


def _describe(what, names, limit=8):
    if not names:
        return ""
    shown = "\n    ".join(names[:limit])
    more = f"\n    ... and {len(names) - limit} more" if len(names) > limit else ""
    return f"  {len(names)} {what}:\n    {shown}{more}"

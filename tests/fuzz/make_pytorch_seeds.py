#!/usr/bin/python3
"""Writes the seed corpus of tests/fuzz/corpus/pytorch/ (committed; run again to rebuild).

Small files written by PyTorch itself (Debian's python3-torch; the corpus is committed so that
neither the build nor the tests need torch), in both torch.save formats and the shapes ggdiff
meets: a flat state dict, a Lightning .ckpt ('state_dict' beside metadata and optimizer
state), an A1111 textual-inversion .pt, a BasicSR .pth ('params' and 'params_ema'), a kohya
LoRA, views sharing one storage; and hostile ones that must be refused: a pickle that calls
os.system, one that calls builtins.eval, a whole nn.Module, a non-contiguous tensor, a
re-zipped (deflated) archive, dicts nested 100 deep.
"""
import collections
import io
import os
import pickle
import sys
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "pytorch")


def save(name, obj, **kw):
    os.makedirs(OUT, exist_ok=True)
    torch.save(obj, os.path.join(OUT, name), **kw)


def pattern(*shape, dtype=torch.float16, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g).mul(2).sub(1).to(dtype)


class Call:
    """Pickles as a call of `fn` with `args` (what a malicious file does)."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def main():
    sd = collections.OrderedDict()
    sd["model.diffusion_model.input_blocks.0.0.weight"] = pattern(8, 4, 3, 3)
    sd["model.diffusion_model.input_blocks.0.0.bias"] = pattern(8, dtype=torch.float32)
    sd["first_stage_model.decoder.conv_in.weight"] = pattern(4, 4, 3, 3, dtype=torch.bfloat16)
    sd["cond_stage_model.transformer.text_model.embeddings.position_ids"] = torch.arange(
        8, dtype=torch.int64).reshape(1, 8)
    sd["alphas_cumprod"] = pattern(10, dtype=torch.float32)
    save("flat.pt", sd)
    save("legacy.pt", sd, _use_new_zipfile_serialization=False)
    save("lightning.ckpt", {"epoch": 6, "global_step": 470000,
                            "pytorch-lightning_version": "1.4.2", "state_dict": sd,
                            "callbacks": {collections.OrderedDict: {"best_model_score": None}},
                            "optimizer_states": [{"state": {0: {"exp_avg": pattern(4)}}}]})
    save("embedding.pt", {"string_to_token": {"*": torch.tensor(265)},
                          "string_to_param": {"*": torch.nn.Parameter(pattern(2, 16, dtype=torch.float32))},
                          "name": "seed", "step": 500})
    esr = {"conv_first.weight": pattern(4, 3, 3, 3), "conv_first.bias": pattern(4)}
    save("esrgan.pth", {"params": esr, "params_ema": {k: v + 1 for k, v in esr.items()}})
    save("lora.ckpt", {"lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight": pattern(4, 8),
                       "lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight": pattern(8, 4),
                       "lora_unet_down_blocks_0_attentions_0_proj_in.alpha": torch.tensor(4.0)})
    base = pattern(64, dtype=torch.float32)
    save("views.pt", {"a": base[:16].view(4, 4), "b": base[16:48].view(2, 16), "c": base[60:]})

    save("evil_os_system.pt", {"x": Call(os.system, ("echo pwned",))})
    save("evil_eval.pt", {"x": Call(eval, ("1+1",))})
    save("module.pt", torch.nn.Linear(2, 3))
    save("noncontiguous.pt", {"t": pattern(3, 5).t()})
    deep = {"w": pattern(2)}
    for _ in range(100):
        deep = {"d": deep}
    save("deep.pt", deep)
    # The flat file re-zipped with compression.
    buf = io.BytesIO()
    with zipfile.ZipFile(os.path.join(OUT, "flat.pt")) as src, \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    with open(os.path.join(OUT, "deflated.pt"), "wb") as f:
        f.write(buf.getvalue())
    # A plain pickle (no torch magic) that calls os.system at once.
    with open(os.path.join(OUT, "plain_pickle.pkl"), "wb") as f:
        pickle.dump(Call(os.system, ("echo pwned",)), f, protocol=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

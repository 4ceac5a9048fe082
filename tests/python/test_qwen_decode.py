"""CPU test of kernels/python/qwen_decode.py without transformers or a GPU (torch only).

A stand-in `transformers` module provides Qwen2Config, Qwen2ForCausalLM and DynamicCache with
the call signatures and module names the arms rely on (a tiny 2-layer causal model with
RMSNorm, attention and MLP modules and a concatenating cache with `layers[i].keys/values`), so
the arms' own logic runs: the layer-0 norm output lands in t.y and matches an RMSNorm
reference; every decode step attends over the same cache; the fused patch swaps every RMSNorm
and passes the logits check; a broken patch fails it; profiled arms mark attention, rmsnorm
and mlp regions; prefill and greedy generation run. What it cannot check is transformers
5.x itself, the Triton kernel, CUDA graphs and torch.compile: those run on the GPU machine.
Prints `N passed, N failed, N skipped`; exit 1 on a failure."""
import importlib.util
import math
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

try:
    import torch
except Exception:  # noqa: BLE001
    print("0 passed, 0 failed, 1 skipped (no torch)")
    sys.exit(0)

nn = torch.nn


# --- the stand-in transformers ----------------------------------------------------------------
class Qwen2Config:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Qwen2RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.variance_epsilon = eps

    def forward(self, x):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(x.dtype)


class Qwen2Attention(nn.Module):
    def __init__(self, c, idx):
        super().__init__()
        self.idx = idx
        self.q = nn.Linear(c.hidden_size, c.hidden_size)
        self.k = nn.Linear(c.hidden_size, c.hidden_size)
        self.v = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, x, cache):
        q, k, v = self.q(x), self.k(x), self.v(x)
        if cache is not None:
            k, v = cache.update(k, v, self.idx)
        n = q.shape[1]
        w = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        total = k.shape[1]
        mask = torch.ones(n, total, dtype=torch.bool).tril(total - n)
        return w.masked_fill(~mask, float("-inf")).softmax(-1) @ v


class Qwen2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.up = nn.Linear(c.hidden_size, c.intermediate_size)
        self.down = nn.Linear(c.intermediate_size, c.hidden_size)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.up(x)))


class Qwen2DecoderLayer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        self.input_layernorm = Qwen2RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Qwen2Attention(c, i)
        self.post_attention_layernorm = Qwen2RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = Qwen2MLP(c)

    def forward(self, x, cache):
        x = x + self.self_attn(self.input_layernorm(x), cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Qwen2DecoderLayer(c, i) for i in range(c.num_hidden_layers))
        self.norm = Qwen2RMSNorm(c.hidden_size, c.rms_norm_eps)


class Out:
    def __init__(self, logits):
        self.logits = logits


class Qwen2ForCausalLM(nn.Module):
    calls = []

    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Qwen2Model(c)

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def forward(self, inputs_embeds=None, past_key_values=None, use_cache=False,
                cache_position=None, position_ids=None):
        Qwen2ForCausalLM.calls.append((inputs_embeds.shape[1],
                                       None if past_key_values is None else past_key_values.length()))
        x = inputs_embeds
        for layer in self.model.layers:
            x = layer(x, past_key_values if use_cache else None)
        return Out(self.model.norm(x) @ self.model.embed_tokens.weight.t())


class _Layer:
    def __init__(self):
        self.keys = self.values = None


class DynamicCache:
    def __init__(self, config=None):
        self.layers = [_Layer() for _ in range(config.num_hidden_layers)]

    def update(self, k, v, i):
        layer = self.layers[i]
        layer.keys = k if layer.keys is None else torch.cat([layer.keys, k], 1)
        layer.values = v if layer.values is None else torch.cat([layer.values, v], 1)
        return layer.keys, layer.values

    def length(self):
        return 0 if self.layers[0].keys is None else self.layers[0].keys.shape[1]


fake = types.ModuleType("transformers")
fake.Qwen2Config, fake.Qwen2ForCausalLM, fake.DynamicCache = Qwen2Config, Qwen2ForCausalLM, DynamicCache
sys.modules["transformers"] = fake

spec = importlib.util.spec_from_file_location("qwen_decode", os.path.join(ROOT, "kernels/python/qwen_decode.py"))
q = importlib.util.module_from_spec(spec)
spec.loader.exec_module(q)
TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2)
q.QWEN25_05B.update(TINY)
q.CACHE, q.PREFILL, q.NEW_TOKENS = 16, 12, 5


class Regions:
    def __init__(self):
        self.open, self.marks = [], []

    def region(self, label):
        rec = self

        class R:
            def __enter__(self):
                rec.open.append(label)

            def __exit__(self, *a):
                rec.marks.append(rec.open.pop())
        return R()


def make_t(profile=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = types.SimpleNamespace()
    t.x = torch.rand(1, 32, generator=g) * 2 - 1
    t.gamma = torch.rand(32, generator=g) + 0.5
    t.y = torch.full((1, 32), float("nan"))
    t.rstd = None
    t.rows, t.cols, t.dtype, t.eps = 1, 32, "fp32", 1e-6
    t.pass_, t.device, t.operation = "fwd", "cpu", "rmsnorm"
    t.options = {"profile": 1.0} if profile else {}
    rec = Regions()
    t.region = rec.region
    t.rec = rec
    return t


def reference_y(t):
    x = t.x.double()
    return (x / torch.sqrt((x * x).mean(-1, keepdim=True) + t.eps) * t.gamma.double()).float()


results = {"passed": 0, "failed": 0, "skipped": 0}


def check(name, ok, detail=""):
    if ok:
        results["passed"] += 1
    else:
        results["failed"] += 1
        print(f"FAIL {name} {detail}")


# fused_rmsnorm on the CPU is the composite; the HF composite against float64
x = torch.rand(3, 32) * 2 - 1
w = torch.rand(32) + 0.5
check("fused cpu path equals the HF composite", torch.equal(q.fused_rmsnorm(x, w, 1e-6), q.hf_rmsnorm(x, w, 1e-6)))

for fn, fused in (("decode_hf", False), ("decode_fused", True)):
    t = make_t(seed=1)
    Qwen2ForCausalLM.calls.clear()
    step = getattr(q, fn)(t)
    check(f"{fn}: setup prefills {q.CACHE} tokens into an empty cache", Qwen2ForCausalLM.calls[-1] == (q.CACHE, 0),
          str(Qwen2ForCausalLM.calls[-1:]))
    for i in range(3):
        t.y.fill_(float("nan"))
        t.x.copy_(torch.rand(1, 32) * 2 - 1)  # prereg refreshes inputs in place
        t.gamma.copy_(torch.rand(32) + 0.5)
        Qwen2ForCausalLM.calls.clear()
        check(f"{fn}: the step returns None", step() is None)
        check(f"{fn}: step {i} decodes one token over {q.CACHE}", Qwen2ForCausalLM.calls == [(1, q.CACHE)],
              str(Qwen2ForCausalLM.calls))
        err = (t.y - reference_y(t)).abs().max().item()
        check(f"{fn}: step {i} writes layer 0's RMSNorm of x with t.gamma into t.y", err < 1e-5, f"err {err}")
    model = step.arm.model
    kinds = {type(m).__name__ for m in model.modules()}
    check(f"{fn}: RMSNorm modules {'patched' if fused else 'kept'}",
          ("FusedRMSNorm" in kinds) == fused and ("Qwen2RMSNorm" in kinds) != fused, str(kinds))

# two instances on one shared model: each step uses its own gamma and y
t1, t2 = make_t(seed=2), make_t(seed=3)
s1, s2 = q.decode_hf(t1), q.decode_hf(t2)
check("instances share one model", s1.arm.model is s2.arm.model)
s1(); s2(); s1()
check("interleaved instances each get their own gamma and y",
      (t1.y - reference_y(t1)).abs().max().item() < 1e-5 and (t2.y - reference_y(t2)).abs().max().item() < 1e-5)

# a broken patch fails the logits check
t = make_t(seed=4)
saved = q.fused_rmsnorm
q.fused_rmsnorm = lambda x, w, eps: q.hf_rmsnorm(x, w, eps) * 1.5
q._Shared.models = {k: v for k, v in q._Shared.models.items() if not k[1]}
try:
    q.decode_fused(t)
    check("a wrong fused norm is refused at setup", False)
except RuntimeError as e:
    check("a wrong fused norm is refused at setup", "patched logits differ" in str(e), str(e))
q.fused_rmsnorm = saved
q._Shared.models = {k: v for k, v in q._Shared.models.items() if not k[1]}

# profiled arms mark the three regions, balanced, and only on their own model
t = make_t(profile=True, seed=5)
step = q.decode_hf(t)
t.rec.marks.clear()
step()
counts = {k: t.rec.marks.count(k) for k in set(t.rec.marks)}
layers = TINY["num_hidden_layers"]
check("profiled decode marks attention, rmsnorm, mlp per layer (and the final norm)",
      counts == {"attention": layers, "mlp": layers, "rmsnorm": 2 * layers + 1}, str(counts))
check("regions close what they open", t.rec.open == [])
plain = make_t(seed=6)
ps = q.decode_hf(plain)
check("an unprofiled arm has another model", ps.arm.model is not step.arm.model)
t.rec.marks.clear()
ps()
check("an unprofiled step marks nothing", t.rec.marks == [] and plain.rec.marks == [])

for fn in ("prefill_hf", "prefill_fused"):
    t = make_t(seed=7)
    step = getattr(q, fn)(t)
    Qwen2ForCausalLM.calls.clear()
    step()
    check(f"{fn}: one forward of {q.PREFILL} tokens into a fresh cache", Qwen2ForCausalLM.calls == [(q.PREFILL, 0)],
          str(Qwen2ForCausalLM.calls))
    check(f"{fn}: t.y is layer 0's norm of the first token", (t.y - reference_y(t)).abs().max().item() < 1e-5)

for fn in ("generate_hf", "generate_fused"):
    t = make_t(seed=8)
    step = getattr(q, fn)(t)
    Qwen2ForCausalLM.calls.clear()
    step()
    want = [(q.PREFILL, 0)] + [(1, q.PREFILL + i) for i in range(q.NEW_TOKENS - 1)]
    check(f"{fn}: prefill then {q.NEW_TOKENS - 1} one-token steps over a growing cache",
          Qwen2ForCausalLM.calls == want, str(Qwen2ForCausalLM.calls))
    check(f"{fn}: t.y from the prefill, not a later step", (t.y - reference_y(t)).abs().max().item() < 1e-5)

# wrong shapes and passes are refused with a reason
t = make_t(); t.rows = 2
try:
    q.decode_hf(t); check("rows 2 refused", False)
except ValueError as e:
    check("rows 2 refused", "rows 1 x cols 32" in str(e), str(e))
t = make_t(); t.pass_ = "fwd+bwd"
try:
    q.decode_hf(t); check("fwd+bwd refused", False)
except ValueError as e:
    check("fwd+bwd refused", "fwd only" in str(e), str(e))

print(f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
sys.exit(1 if results["failed"] else 0)

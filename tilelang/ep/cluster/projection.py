"""A training step of one MoE layer, projected: compute from tcsim, communication from the
cluster model.

Per rank and layer, forward: attention (DeepSeek-V3's MLA shapes: the q / kv down and up
projections and the output projection as GEMMs over the rank's tokens, causal attention
over them) and the expert GEMMs of the rows the rank received (gate and up fused,
`[rows, hidden] x [hidden, 2 * intermediate]`, then down, each expert's rows padded to
the GEMM's 128-row block); the backward pass computes twice the forward's FLOPs. The
busiest rank sets the pace (the combine waits for it).

Communication: forward dispatch (fp8) and combine (bf16); backward, the combine's
gradient is a dispatch of bf16 tokens and the dispatch's gradient a combine.

* without overlap the step is compute + communication;
* with overlap (two micro-batches, one computing while the other communicates, as
  DeepSeek-V3's DualPipe does) it is the longer of the two, the compute slowed by the
  SMs the communication kernels take (`comm_sms` of the machine's cores).

Communication share = 1 - the rank's own compute time / step time; iteration efficiency =
a balanced rank's compute time (the mean rows) / step time.
"""
from __future__ import annotations

from dataclasses import dataclass

from .scenario import Scenario
from .timings import attention_seconds, gemm_seconds


@dataclass(frozen=True)
class Model:
    hidden: int = 7168
    intermediate: int = 2048        # per expert (moe_intermediate_size)
    heads: int = 128
    q_lora: int = 1536
    kv_lora: int = 512
    qk_nope: int = 128
    qk_rope: int = 64
    v_head: int = 128
    comm_sms: int = 24              # SMs DeepEP's normal kernels take
    config: str = "h100_like"
    tflops: float | None = None     # set: every GEMM at this rate instead of tcsim

    def gemm(self, m, n, k) -> float:
        if self.tflops:
            return 2.0 * m * n * k / (self.tflops * 1e12)
        return gemm_seconds(int(m), int(n), int(k), self.config)

    def attention(self, tokens: int) -> float:
        qk = self.qk_nope + self.qk_rope
        gemms = [(tokens, self.q_lora, self.hidden),
                 (tokens, self.heads * qk, self.q_lora),
                 (tokens, self.kv_lora + self.qk_rope, self.hidden),
                 (tokens, self.heads * (self.qk_nope + self.v_head), self.kv_lora),
                 (tokens, self.hidden, self.heads * self.v_head)]
        if self.tflops:
            core = 2.0 * tokens * tokens * self.heads * (qk + self.v_head) / 2
            core /= self.tflops * 1e12
        else:
            core = attention_seconds(tokens, self.heads, self.config)
        return sum(self.gemm(*g) for g in gemms) + core

    def experts(self, rows) -> float:
        return (self.gemm(rows, 2 * self.intermediate, self.hidden)
                + self.gemm(rows, self.hidden, self.intermediate))

    def cores(self) -> int:
        from ...targets.tcsim.config import get_config
        return get_config(self.config).cores


@dataclass
class StepRow:
    name: str
    attention: float
    experts_max: float
    experts_mean: float
    comm: float                 # all four collectives of the step
    dispatch: float
    combine: float
    bottleneck: tuple
    skew_loss: float
    step_serial: float
    step_overlap: float
    compute: float
    ideal: float

    def share(self, overlap: bool) -> float:
        step = self.step_overlap if overlap else self.step_serial
        return 1.0 - self.compute / step

    def efficiency(self, overlap: bool) -> float:
        return self.ideal / (self.step_overlap if overlap else self.step_serial)


def project(scenarios: list[Scenario], tokens: int, model: Model = Model()) -> list[StepRow]:
    """One StepRow per scenario (`scenario.run(..., bf16_dispatch=True)`)."""
    attention = model.attention(tokens)
    slowdown = model.cores() / (model.cores() - model.comm_sms)
    rows = []
    for sc in scenarios:
        padded = sc.extra["padded_rows"]
        experts_max = model.experts(padded.max())
        experts_mean = model.experts(padded.mean())
        d16 = sc.extra["dispatch_bf16"].time
        comm = sc.dispatch.time + sc.combine.time + d16 + sc.combine.time
        compute = 3 * (attention + experts_max)
        rows.append(StepRow(sc.name, attention, experts_max, experts_mean, comm,
                            sc.dispatch.time, sc.combine.time, sc.dispatch.bottleneck(),
                            sc.skew_loss, compute + comm, max(compute * slowdown, comm),
                            compute, 3 * (attention + experts_mean)))
    return rows

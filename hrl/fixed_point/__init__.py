"""The FPGA learning module's arithmetic: fixed-point formats and the learner that uses them.

`numerics` defines the narrowing (round to nearest even, then saturate) and the exact
multiply-accumulate that the RTL learner (`fpga_rtl/rtl/hrl_learn_*`) matches bit for bit.
`formats` fixes the width of every word; `layers` (dense forward, backward, weight and bias
gradients, the actor's clip), `losses` (DQN's and DDPG's loss unit) and `optim` (momentum SGD,
Polyak and hard target updates) are the hardware units, one pure function each: the golden
models of the RTL's testbenches. The host's side of the FPGA learner's kernel:
`kernel_program`, `train_program` (DQN's step) and `ddpg_program` (DDPG's) write its
programs, `kernel_host` drives it over OpenCL (`placement.infer: fpga`), `kernel_train` runs
DQN's SGD step and inference on it and `kernel_train_ddpg` DDPG's SGD step
(`placement.train: fpga`).
"""

from hrl.fixed_point.numerics import (
    Fx,
    add,
    dequantize,
    matmul,
    multiply,
    multiply_add,
    narrow,
    quantize,
)

__all__ = ["Fx", "add", "dequantize", "matmul", "multiply", "multiply_add", "narrow", "quantize"]

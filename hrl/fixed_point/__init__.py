"""The FPGA learning module's arithmetic: fixed-point formats and the learner that uses them.

`numerics` defines the narrowing (round to nearest even, then saturate) and the exact
multiply-accumulate that the RTL learner (`fpga_rtl/rtl/hrl_learn_*`) matches bit for bit.
"""

from hrl.fixed_point.numerics import Fx, add, dequantize, matmul, multiply, narrow, quantize

__all__ = ["Fx", "add", "dequantize", "matmul", "multiply", "narrow", "quantize"]

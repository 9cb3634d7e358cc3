"""What the cocotb testbenches under sim/ share: the reset pulse, a monitor started once from
the first reset on, the learner units' stream testbench, and backpressure as random pauses.

Each helper keeps the order in which the testbenches draw their random numbers (a pause
generator draws its seed when the bus first asks it, not when it is made), so a testbench's
stimulus is the same whether it writes these lines itself or calls them here.
"""

from __future__ import annotations

import abc
import random
from collections.abc import Callable, Iterable, Iterator

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge


async def pulse_reset(clk, rst, cycles: int = 3) -> None:
    """Hold `rst` high for `cycles` rising edges of `clk`, then drive it low (the next rising
    edge is the first that sees it low; the caller waits for it or not)."""
    rst.value = 1
    for _ in range(cycles):
        await RisingEdge(clk)
    rst.value = 0


class MonitoredTB:
    """A testbench whose `_monitor` coroutine records (and checks) the handshakes at every
    rising edge, started by the first `reset` only: a second monitor would count every
    handshake twice. Subclasses set `self.dut` and write `_monitor`."""

    monitoring = False

    async def reset(self):
        """Pulse `dut.rst` for 3 cycles; return at the first rising edge that sees it low."""
        await pulse_reset(self.dut.clk, self.dut.rst)
        await RisingEdge(self.dut.clk)
        if not self.monitoring:
            cocotb.start_soon(self._monitor())
            self.monitoring = True

    async def _monitor(self):
        raise NotImplementedError


class StreamTB(abc.ABC):
    """A learning-module unit that takes one input per cycle (`in_valid`) and gives one
    output per cycle (`out_valid`) some cycles later: a 10 ns clock, a reset that zeroes
    `in_valid` and the inputs named in INPUTS and holds `rst` for 2 cycles, and a monitor
    that appends `sample()` to `self.out` at every falling edge where `out_valid` is high."""

    INPUTS: tuple[str, ...] = ()

    def __init__(self, dut):
        self.dut = dut
        self.out = []
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        cocotb.start_soon(self._monitor())

    async def reset(self):
        d = self.dut
        d.in_valid.value = 0
        for name in self.INPUTS:
            getattr(d, name).value = 0
        await pulse_reset(d.clk, d.rst, cycles=2)

    async def _monitor(self):
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            if str(d.out_valid.value) == "1":
                self.out.append(self.sample())

    @abc.abstractmethod
    def sample(self):
        """The output words of this cycle, read from the DUT's ports."""


def pauses(draw_seed: Callable[[], int | float], prob: float) -> Iterator[bool]:
    """Backpressure for a cocotbext-axi channel or a stream: True (pause this cycle) with
    probability `prob`, from a generator of its own seeded by `draw_seed()` on first use."""
    rng = random.Random(draw_seed())
    while True:
        yield rng.random() < prob


def set_pauses(channels: Iterable, draw_seed: Callable[[], int | float], prob: float,
               on: bool) -> None:
    """Random pauses (`pauses`, one generator per channel) on every cocotbext-axi channel of
    `channels`, or none when `on` is False."""
    for ch in channels:
        ch.set_pause_generator(pauses(draw_seed, prob) if on else None)


class HeldOffer:
    """The valid/ready rule on an output port, checked at every rising edge: once valid is high,
    the payload holds until ready takes it, and valid does not drop before. `held` is the
    payload offered and not yet taken (None: nothing waits)."""

    def __init__(self):
        self.held = None

    def taken(self, valid: int, ready: int, offer=None) -> bool:
        """Check this edge's `offer` (its payload, when `valid`); True if `ready` took it."""
        if valid:
            if self.held is not None:
                assert offer == self.held, "m_* changed while stalled"
            if ready:
                self.held = None
                return True
            self.held = offer
            return False
        assert self.held is None, "m_valid dropped while stalled"
        return False


def check_incr_bursts(bursts: list[tuple[int, int]], addr: int, count: int, bpb: int) -> None:
    """AXI4 INCR bursts `bursts` ((address, beats) per address handshake) of a job of `count`
    beats of `bpb` bytes from `addr`: contiguous from `addr`, 1 to 256 beats, never across a
    4 KiB boundary, each as long as it may be, adding up to `count`."""
    at, total = addr, 0
    for a, n in bursts:
        assert a == at, f"burst at 0x{a:x}, expected 0x{at:x}"
        assert 1 <= n <= 256, n
        assert a // 4096 == (a + n * bpb - 1) // 4096, f"burst 0x{a:x}+{n} crosses 4 KiB"
        # As long as possible: up to the 4 KiB boundary, 256 beats or the end.
        assert n == min(256, (4096 - a % 4096) // bpb, count - total), (a, n)
        at += n * bpb
        total += n
    assert total == count, f"bursts cover {total} beats, not {count}"

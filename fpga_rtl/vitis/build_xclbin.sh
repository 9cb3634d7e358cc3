#!/usr/bin/env bash
# Build an xclbin of hrl_rmm_kernel with the vendor tools (Vivado + Vitis, 2022.1 or newer,
# and the board's platform). NOT RUN HERE: this machine has neither.
#
#   fpga_rtl/vitis/build_xclbin.sh [PLATFORM] [K D P W]
#   e.g. fpga_rtl/vitis/build_xclbin.sh xilinx_u200_gen3x16_xdma_2_202110_1 16 5 1 32
#
# Output in build_vitis/: hrl_rmm_kernel.xo, then hrl_rmm.xclbin (hours of place and route).
set -euo pipefail
platform=${1:-xilinx_u200_gen3x16_xdma_2_202110_1}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
for tool in vivado v++; do
    command -v "$tool" >/dev/null || { echo "error: $tool not found; source the Vitis settings64.sh" >&2; exit 1; }
done
mkdir -p "$root/build_vitis"
cd "$root/build_vitis"
vivado -mode batch -source "$here/package_kernel.tcl" -tclargs hrl_rmm_kernel.xo "$@"
v++ -l -t hw --platform "$platform" --config "$here/link.cfg" -o hrl_rmm.xclbin hrl_rmm_kernel.xo
echo "built $root/build_vitis/hrl_rmm.xclbin"

# Package hrl_rmm_kernel as a Vitis RTL kernel (.xo). Needs Vivado (the Vitis install).
#
#   vivado -mode batch -source fpga_rtl/vitis/package_kernel.tcl \
#          -tclargs <out.xo> [K D P W]          (defaults: 16 5 1 32, capacity 16**5)
#
# Run from the repository root. The HDL parameters become the IP's user-parameter
# values, so one .xo holds one tree shape. NOT RUN HERE: this machine has no Vivado; the
# script follows the Vitis RTL kernel flow (ipx::package_project + package_xo) and is
# checked only for consistency with kernel.xml and the RTL (tests/rtl/test_rtl_kernel.py).

if {[llength $argv] < 1} {
    error "usage: vivado -mode batch -source package_kernel.tcl -tclargs <out.xo> \[K D P W\]"
}
set xo_path [file normalize [lindex $argv 0]]
set params [dict create K 16 D 5 P 1 W 32]
if {[llength $argv] == 5} {
    dict set params K [lindex $argv 1]
    dict set params D [lindex $argv 2]
    dict set params P [lindex $argv 3]
    dict set params W [lindex $argv 4]
} elseif {[llength $argv] != 1} {
    error "give all four of K D P W, or none"
}

set root [file normalize [file dirname [info script]]/../..]
set fpga $root/fpga_rtl
set work [file normalize ./hrl_rmm_kernel_pack]
set sources {}
foreach line [split [string trim [read [open $fpga/rtl/hrl_rmm_kernel.f]]] "\n"] {
    lappend sources $fpga/[string trim $line]
}

create_project -force kernel_pack $work/project
add_files -norecurse $sources
set_property top hrl_rmm_kernel [current_fileset]
update_compile_order -fileset sources_1

ipx::package_project -root_dir $work/ip -vendor hrl.dev -library kernel \
    -taxonomy /KernelIP -import_files -set_current false
ipx::unload_core $work/ip/component.xml
ipx::edit_ip_in_project -upgrade true -name tmp_edit_project -directory $work/ip \
    $work/ip/component.xml
set core [ipx::current_core]
set_property core_revision 1 $core

# The tree shape.
foreach name {K D P W} {
    set_property value [dict get $params $name] [ipx::get_user_parameters $name -of_objects $core]
}

# Interfaces: the three buses on ap_clk, reset ap_rst_n (active low), the interrupt.
ipx::associate_bus_interfaces -busif s_axi_control -clock ap_clk $core
ipx::associate_bus_interfaces -busif m_axi_gmem0 -clock ap_clk $core
ipx::associate_bus_interfaces -busif m_axi_gmem1 -clock ap_clk $core
ipx::infer_bus_interface ap_rst_n xilinx.com:signal:reset_rtl:1.0 $core
ipx::infer_bus_interface interrupt xilinx.com:signal:interrupt_rtl:1.0 $core
set_property value ACTIVE_LOW [ipx::add_bus_parameter POLARITY \
    [ipx::get_bus_interfaces ap_rst_n -of_objects $core]]

# Register map of s_axi_control (same offsets as kernel.xml and the RTL header).
set mem_map [ipx::add_memory_map -quiet s_axi_control $core]
set block [ipx::add_address_block -quiet reg0 $mem_map]
set_property range 0x80 $block
set regs {
    CTRL 0x00 32 {} GIER 0x04 32 {} IP_IER 0x08 32 {} IP_ISR 0x0c 32 {}
    command 0x10 32 {} count 0x18 32 {} level 0x20 32 {} row 0x28 32 {} seed 0x30 32 {}
    indices 0x38 64 m_axi_gmem0 words 0x40 64 m_axi_gmem1 randoms 0x48 64 m_axi_gmem1
    results 0x50 64 m_axi_gmem0
}
foreach {name offset size busif} $regs {
    set reg [ipx::add_register $name $block]
    set_property address_offset $offset $reg
    set_property size $size $reg
    if {$busif ne ""} {
        set param [ipx::add_register_parameter ASSOCIATED_BUSIF $reg]
        set_property value $busif $param
    }
}
set_property slave_memory_map_ref s_axi_control \
    [ipx::get_bus_interfaces s_axi_control -of_objects $core]

set_property sdx_kernel true $core
set_property sdx_kernel_type rtl $core
set_property ipi_drc {ignore_freq_hz true} $core
ipx::create_xgui_files $core
ipx::update_checksums $core
ipx::check_integrity -kernel $core
ipx::save_core $core
close_project -delete

package_xo -force -xo_path $xo_path -kernel_name hrl_rmm_kernel -ip_directory $work/ip \
    -kernel_xml $fpga/vitis/kernel.xml
puts "wrote $xo_path ([dict get $params K] [dict get $params D] [dict get $params P] [dict get $params W])"

rtl/hrl_ram.v
rtl/hrl_fifo.v
rtl/hrl_descend_step.v
rtl/hrl_update_step.v
rtl/hrl_rmm.v
rtl/hrl_axi_rd.v
rtl/hrl_axi_wr.v
rtl/hrl_rmm_kernel.v

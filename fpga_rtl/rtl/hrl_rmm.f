rtl/hrl_ram.v
rtl/hrl_fifo.v
rtl/hrl_delay.v
rtl/hrl_mul_pipe.v
rtl/hrl_descend_step.v
rtl/hrl_update_step.v
rtl/hrl_rmm.v

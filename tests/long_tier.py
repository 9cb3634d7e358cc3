"""Tests moved to the `long` tier by id, each with the quicker test in `make test` that checks
the same contract (its "twin").

`make test` must stay within its time on 2 cores; CI runs the long tier right after it
(`make test-long`), so nothing here leaves CI. A test goes here, not under a
`@pytest.mark.long` in its file, when only some of its parameter sets are long or when its file
is a testbench's (sim/), so that the whole list, and why each entry may go, is read in one
place. `tests/conftest.py` marks these ids at collection and refuses the list when an id or a
twin names no test of a collected file, or a twin is not in `make test` itself.
"""

from __future__ import annotations

# id of the long test -> id of its twin in `make test`
LONG: dict[str, str] = {
    # RTL: the same RMM in the same simulator at smaller or shallower parameter sets.
    "tests/rtl/test_rtl.py::test_icarus[K4-D4-P1-W32]":  # Icarus: two minutes on 2 cores
        "tests/rtl/test_rtl.py::test_verilator[K16-D2-P2-W32]",
    "tests/rtl/test_rtl_kernel.py::test_kernel_verilator[K4-D3-P1-W32]":  # a minute's build
        "tests/rtl/test_rtl_kernel.py::test_kernel_icarus[K16-D2-P2-W24-DW64-N200-stall]",
    "tests/rtl/test_rtl.py::test_verilator_lint[lint-K64-D2-P3-W32]":
        "tests/rtl/test_rtl.py::test_verilator_lint[lint-K16-D3-P2-W32]",
    "tests/rtl/test_rtl.py::test_verilator_lint[lint-K4-D3-P16-W32]":
        "tests/rtl/test_rtl.py::test_verilator_lint[lint-K4-D3-P4-W24]",
    "tests/rtl/test_rtl_modules.py::test_hrl_update_step[K16-W32-P2-L1-LPS1]":
        "tests/rtl/test_rtl_modules.py::test_hrl_update_step[K16-W24-P4-L0-LPS8]",
    "tests/rtl/test_rtl.py::test_verilator[K4-D7-P2-W32-deep]":
        "tests/rtl/test_rtl.py::test_verilator[K16-D2-P2-W32]",
    "tests/rtl/test_rtl.py::test_verilator[K4-D3-P4-W24-N50]":
        "tests/rtl/test_rtl.py::test_verilator[K16-D2-P2-W32]",
    "tests/rtl/test_rtl.py::test_verilator[K16-D3-P1-W32-N4000]":
        "tests/rtl/test_rtl.py::test_verilator[K16-D2-P2-W32]",
    "tests/replay/test_backends_rtl.py::test_memory_side_feeds_every_lane":
        "tests/replay/test_backends_rtl.py::test_same_op_stream_same_trees_and_samples",
    "tests/replay/test_backends_rtl.py::test_same_op_stream_same_trees_and_samples"
    "[N300-K8-W32-P2]":
        "tests/replay/test_backends_rtl.py::test_same_op_stream_same_trees_and_samples"
        "[N50-K4-W24-cocotbext]",
    # Trees: the same kernels against the same reference at other sizes and fanouts.
    "tests/replay/test_pallas_sumtree.py::test_sample_equals_reference[5000-16-fixed]":
        "tests/replay/test_pallas_sumtree.py::test_sample_equals_reference[1000-4-fixed]",
    "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
    "leaf_read[2-fixed]":
        "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
        "leaf_read[4-fixed]",
    "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
    "leaf_read[2-float32]":
        "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
        "leaf_read[4-float32]",
    "tests/replay/test_sharded_replay.py::test_float32_uneven_shards_sample_the_single_tree_"
    "distribution":
        "tests/replay/test_sharded_replay.py::test_fixed_point_same_bits_same_indices_as_one_tree",
    "tests/replay/test_native_sumtree.py::test_sample_matches_reference":
        "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
        "leaf_read[16-fixed]",
    "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
    "leaf_read[64-fixed]":
        "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
        "leaf_read[16-fixed]",
    "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
    "leaf_read[64-float32]":
        "tests/replay/test_native_sumtree.py::test_sample_with_key_equals_bits_descent_clamp_and_"
        "leaf_read[16-float32]",
    "tests/replay/test_pallas_sumtree.py::test_sample_equals_reference[5000-16-float32]":
        "tests/replay/test_pallas_sumtree.py::test_sample_equals_reference[1000-4-float32]",
    "tests/replay/test_pallas_sumtree.py::test_buffer_impl_pallas_equals_xla[fixed:16:6]":
        "tests/replay/test_pallas_sumtree.py::test_buffer_impl_pallas_equals_xla[fixed]",
    "tests/replay/test_host_buffer.py::test_host_buffer_equals_prioritized_replay[fixed-global]":
        "tests/replay/test_host_buffer.py::test_host_buffer_equals_prioritized_replay"
        "[fixed:16:6-global]",
    "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[2-3-4-50-False-xla]":
        "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-False-xla]",
    "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[3-1-2-61-False-xla]":
        "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-False-xla]",
    "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[3-4-1-40-False-xla]":
        "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-False-xla]",
    "tests/replay/test_host_native.py::test_resume_from_a_checkpoint_equals_the_uninterrupted_run":
        "tests/runtime/test_run.py::test_seeded_run_is_reproducible_and_resume_is_exact",
    "tests/replay/test_native_sumtree.py::test_update_stream_matches_reference":
        "tests/replay/test_native_sumtree.py::test_replay_update_equals_the_reference_steps",
    "tests/replay/test_native_sumtree.py::test_nested_vmap_two_by_two":
        "tests/replay/test_native_sumtree.py::test_vmap_over_trees",
    "tests/replay/test_pallas_sumtree.py::test_update_matches_reference[5000-16-fixed]":
        "tests/replay/test_pallas_sumtree.py::test_update_matches_reference[1000-4-fixed]",
    "tests/replay/test_sharded_replay.py::test_shard_map_on_four_devices_matches_the_single_tree":
        "tests/replay/test_sharded_replay.py::test_fixed_point_same_bits_same_indices_as_one_tree",
    "tests/replay/test_buffer.py::test_native_and_xla_kernels_give_the_same_buffer[float32]":
        "tests/replay/test_buffer.py::test_native_and_xla_kernels_give_the_same_buffer[fixed]",
    "tests/replay/test_compact_obs.py::test_sharded_buffer_round_trip[bool]":
        "tests/replay/test_compact_obs.py::test_sharded_buffer_round_trip[uint8]",
    "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-True-xla]":
        "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-False-xla]",
    "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[2-3-4-50-True-xla]":
        "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-False-xla]",
    "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[2-3-4-50-False-native]":
        "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-False-native]",
    "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[3-1-2-61-False-native]":
        "tests/replay/test_next_slot.py::test_samples_equal_the_twice_stored_layout_bit_for_bit[1-2-8-37-False-native]",
    "tests/replay/test_compact_obs.py::test_jax_buffer_round_trip[pallas-uint8]":
        "tests/replay/test_compact_obs.py::test_jax_buffer_round_trip[pallas-bool]",
    "tests/replay/test_pallas_sumtree.py::test_update_matches_reference[5000-16-float32]":
        "tests/replay/test_pallas_sumtree.py::test_update_matches_reference[1000-4-float32]",
    "tests/replay/test_pallas_sumtree.py::test_update_matches_reference[5000-16-fixed:16:6]":
        "tests/replay/test_pallas_sumtree.py::test_update_matches_reference[1000-4-fixed:16:6]",
    "tests/replay/test_pallas_sumtree.py::test_sample_equals_reference[5000-16-fixed:16:6]":
        "tests/replay/test_pallas_sumtree.py::test_sample_equals_reference[1000-4-fixed:16:6]",
    "tests/replay/test_host_native.py::test_host_loop_run_equals_the_jitted_buffer_bit_for_bit"
    "[relaxed2]":
        "tests/replay/test_host_native.py::test_host_loop_run_equals_the_jitted_buffer_bit_for_bit"
        "[pipelined-relaxed2]",
    # The conv lowering: the same check on the other network shapes.
    "tests/agents/test_conv_lowering.py::test_same_parameters_outputs_and_gradients_as_nn_conv[obs_shape1-layers1]":
        "tests/agents/test_conv_lowering.py::test_same_parameters_outputs_and_gradients_as_nn_conv[obs_shape2-layers2]",
    "tests/agents/test_conv_lowering.py::test_same_parameters_outputs_and_gradients_as_nn_conv[obs_shape3-layers3]":
        "tests/agents/test_conv_lowering.py::test_same_parameters_outputs_and_gradients_as_nn_conv[obs_shape2-layers2]",
    # Runs: the same guarantee through a cheaper path.
    "tests/runtime/executors/test_pipelined.py::test_host_executors_store_next_obs_once_by_"
    "default_and_train_as_stored[dqn_cartpole-sequential]":
        "tests/runtime/executors/test_pipelined.py::test_host_executors_store_next_obs_once_by_"
        "default_and_train_as_stored[dqn_cartpole_gymnasium-pipelined]",
    "tests/runtime/test_rate_limit.py::test_fast_actors_are_held_in_the_band_and_results_do_"
    "not_change[process]":
        "tests/runtime/test_rate_limit.py::test_fast_actors_are_held_in_the_band_and_results_do_"
        "not_change[thread]",
    "tests/replay/test_host_buffer.py::test_host_buffer_equals_prioritized_replay"
    "[float32-global]":
        "tests/replay/test_host_buffer.py::test_host_buffer_equals_prioritized_replay"
        "[float32-batch]",
    "tests/runtime/executors/test_data_parallel.py::test_several_devices_keep_one_set_of_"
    "parameters":
        "tests/runtime/executors/test_data_parallel.py::test_one_device_reproduces_the_fused_"
        "loop_bit_for_bit",
    "tests/runtime/test_cpu_dispatch.py::test_set_at_build_in_a_fresh_process_and_results_"
    "equal_bit_for_bit":
        "tests/runtime/test_cpu_dispatch.py::test_a_started_backend_leaves_the_environment_alone",
    "tests/runtime/test_cpu_dispatch.py::test_a_placement_on_cpu_1_makes_the_second_device_"
    "itself":
        "tests/runtime/test_placement.py::test_config_placement_runs_each_primitive_on_its_"
        "device_with_the_same_result",
    "tests/runtime/test_placement.py::test_placement_on_two_cpu_devices_equals_one":
        "tests/runtime/test_placement.py::test_config_placement_runs_each_primitive_on_its_"
        "device_with_the_same_result",
    "tests/runtime/test_reliability.py::test_kill_9_of_a_host_loop_run_resumes_bit_for_bit":
        "tests/runtime/test_run.py::test_ctrl_c_leaves_a_resumable_checkpoint",
    "tests/runtime/test_evaluation.py::test_evaluation_changes_nothing_in_training_and_keeps_"
    "the_best":
        "tests/runtime/test_evaluation.py::test_resume_with_evaluation_is_exact",
    "tests/mapping/test_profile_overlap.py::test_relaxed_overlap_probe_times_the_runtime_loops"
    "[opencl-executors0]":
        "tests/mapping/test_profile_overlap.py::test_overlap_loops_are_the_runtime_s_in_both_modes",
    "tests/mapping/test_profiler.py::test_the_profile_times_the_tree_alone_on_a_second_cpu_"
    "device":
        "tests/mapping/test_profiler.py::test_profile_times_every_primitive_on_cpu",
}

"""The RL core: one code path whose component toggles make PPO, GRPO, Dr. GRPO, DAPO, VAPO, GSPO,
GEPO, RLOO and REINFORCE++ (see ``experiments/presets/``)."""

from algos.kernels import pin_portable_kernels

pin_portable_kernels()  # before anything imports torch: see algos.kernels

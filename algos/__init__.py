"""The RL core: one code path whose component toggles make PPO, GRPO, Dr. GRPO, DAPO, VAPO, GSPO,
GEPO, RLOO and REINFORCE++ (see ``experiments/presets/``)."""

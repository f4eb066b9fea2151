# Helpers shared by the rule files.


def model_directory(wildcards):
    """The built-in base, or the final policy of the training run results/runs/<model>."""
    if wildcards.model == "base_model":
        return "results/base_model"
    return f"results/runs/{wildcards.model}/checkpoint/policy"

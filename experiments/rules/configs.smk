rule resolve_config:
    """Resolve a preset into its full, validated config (the first input of every run)."""
    input:
        "experiments/presets/{preset}.yaml",
    output:
        "results/configs/{preset}.yaml",
    log:
        "results/logs/resolve_config/{preset}.log",
    conda:
        "../envs/harness.yml"
    message:
        "Resolving and validating the {wildcards.preset} preset"
    shell:
        "python -m algos.config.presets --preset {wildcards.preset} > {output} 2> {log}"
